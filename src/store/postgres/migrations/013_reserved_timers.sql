-- Placeholder on the lists branch only, so 014 loads in sequence here: delete at merge
-- (the real timers migration takes this number).
SELECT 1;
