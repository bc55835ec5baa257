-- The first schema. Runs inside one transaction with search_path set to the store's schema,
-- so names here are unqualified. A published migration is never edited: a change is a new file.
--
-- Identifiers and ISO-8601 timestamps are text COLLATE "C": ordering and the expiry
-- comparison are then byte order, exactly as in SQLite and the memory store, whatever
-- collation the database was created with. Payload columns hold the codec's text as it is.

CREATE TABLE sessions (
  id text COLLATE "C" PRIMARY KEY,
  agent text COLLATE "C" NOT NULL,
  principal text COLLATE "C",
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  message_count integer NOT NULL DEFAULT 0,
  batch text,
  lease_owner text COLLATE "C",
  lease_until bigint NOT NULL DEFAULT 0
);

CREATE TABLE messages (
  session text COLLATE "C" NOT NULL REFERENCES sessions (id),
  seq integer NOT NULL,
  at text COLLATE "C" NOT NULL,
  body text NOT NULL,
  PRIMARY KEY (session, seq)
);

CREATE TABLE approvals (
  id text COLLATE "C" PRIMARY KEY,
  session text COLLATE "C" NOT NULL REFERENCES sessions (id),
  agent text COLLATE "C" NOT NULL,
  call_id text COLLATE "C" NOT NULL,
  tool text COLLATE "C" NOT NULL,
  args_json text NOT NULL,
  args_hash text COLLATE "C" NOT NULL,
  effect text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  decision text
);
CREATE INDEX approvals_by_status ON approvals (status, created_at);
CREATE INDEX approvals_by_session ON approvals (session);

CREATE TABLE executions (
  request_id text COLLATE "C" PRIMARY KEY,
  session text COLLATE "C" NOT NULL REFERENCES sessions (id),
  call_id text COLLATE "C" NOT NULL,
  tool text COLLATE "C" NOT NULL,
  args text NOT NULL,
  idempotency_key text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  result text,
  attempts integer NOT NULL,
  started_at text COLLATE "C" NOT NULL,
  finished_at text COLLATE "C"
);
CREATE INDEX executions_by_session ON executions (session);

CREATE TABLE audit (
  seq bigint PRIMARY KEY,
  at text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL,
  session text COLLATE "C",
  request_id text COLLATE "C",
  actor text NOT NULL,
  data text NOT NULL,
  prev_hash bytea NOT NULL,
  hash bytea NOT NULL
);
CREATE INDEX audit_by_session ON audit (session);

-- The chain's tail in one row: every audit append locks it (SELECT … FOR UPDATE) as the last
-- thing before COMMIT, so appends from any number of processes link up in one line.
CREATE TABLE audit_head (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq bigint NOT NULL,
  hash bytea NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (true, 0, decode(repeat('00', 32), 'hex'));

CREATE TABLE state (
  namespace text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (namespace, key)
);
