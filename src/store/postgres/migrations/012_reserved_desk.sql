-- Placeholder on the timers branch only, so 013 loads in sequence here: delete at merge
-- (the real desk migration takes this number).
SELECT 1;
