-- Placeholder on the timers branch only, so 013 loads in sequence here: delete at merge
-- (the real crypt migration takes this number).
SELECT 1;
