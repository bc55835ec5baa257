-- Placeholder for crypt's migration 010 (envelope encryption), so this branch's 011 is in
-- sequence on its own. Deleted when crypt's 010 is merged in.
SELECT 1;
