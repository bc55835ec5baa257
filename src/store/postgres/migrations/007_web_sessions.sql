-- Inbox sign-ins, as SQLite's migration 7, shared by every server instance on the schema:
-- the SHA-256 of the cookie value in hex (never the value itself), the approver's name (the
-- roles come from each server's configuration on every request) and the expiry in epoch
-- ms, indexed so that pruning expired rows on sign-in walks only those.

CREATE TABLE web_sessions (
  id_hash text COLLATE "C" PRIMARY KEY,
  approver text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
