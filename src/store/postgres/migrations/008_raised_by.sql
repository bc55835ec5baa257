-- Who raised each request (the caller that posted the message), as SQLite's migration 8, for
-- separation of duties: they may not decide it. Null in rows written before it was recorded.

ALTER TABLE approvals ADD COLUMN raised_by text COLLATE "C";
