-- The delivery outbox (webhooks), as SQLite's migration 6. `next_at` (epoch ms) is when a
-- pending row is due: its retry time, or the end of its current claim, after which the claim
-- has lapsed. Claiming is one UPDATE over a `FOR UPDATE SKIP LOCKED` selection, so processes
-- claiming together never take the same row. The partial index holds only pending rows, so
-- finding due ones walks a handful of entries however many were delivered.

CREATE TABLE deliveries (
  id text COLLATE "C" PRIMARY KEY,
  kind text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0,
  next_at bigint NOT NULL,
  claimed_by text COLLATE "C",
  last_error text,
  finished_at text COLLATE "C"
);
CREATE INDEX deliveries_due ON deliveries (next_at) WHERE status = 'pending';
