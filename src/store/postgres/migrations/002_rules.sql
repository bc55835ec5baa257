-- Standing approvals ("always approve" for a session), created with a winning decision.
CREATE TABLE rules (
  id text COLLATE "C" PRIMARY KEY,
  session text COLLATE "C" NOT NULL REFERENCES sessions (id),
  tool text COLLATE "C" NOT NULL,
  tool_identity text COLLATE "C" NOT NULL,
  args_hash text COLLATE "C",
  source_request text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  created_by text NOT NULL,
  revoked_at text COLLATE "C",
  revoked_by text
);
CREATE INDEX rules_by_session ON rules (session);
