-- Workflow runs (the CheckpointStore half of the store), as SQLite's migration 3.
-- `workflow_runs` keeps each run's latest checkpoint, so the compare-and-set on a save is one
-- conditional UPDATE (or an INSERT … ON CONFLICT DO NOTHING for a run's first checkpoint).
-- Workflow state shares the agents' `state` table.

CREATE TABLE workflow_runs (
  id text COLLATE "C" PRIMARY KEY,
  workflow text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  status text COLLATE "C" NOT NULL,
  latest text COLLATE "C" NOT NULL,
  latest_seq integer NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL
);

CREATE TABLE workflow_checkpoints (
  id text COLLATE "C" PRIMARY KEY,
  run text COLLATE "C" NOT NULL REFERENCES workflow_runs (id),
  seq integer NOT NULL,
  parent text COLLATE "C",
  superstep integer NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  workflow text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  status text COLLATE "C" NOT NULL,
  body text NOT NULL,
  UNIQUE (run, seq)
);

CREATE TABLE workflow_answers (
  run text COLLATE "C" NOT NULL,
  request_id text COLLATE "C" NOT NULL,
  response text NOT NULL,
  answered_by text NOT NULL,
  answered_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (run, request_id)
);
