-- Placeholder for migration 015, which another branch adds; this branch's own is 016
-- (text search). Migrations must be numbered without gaps, so this stands in until the
-- merge: drop this file when the real 015 arrives.
SELECT 1;
