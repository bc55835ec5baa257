-- Erasure and retention, as SQLite's migration 11. `data_hash` is entry hashing version 2:
-- the link covers the SHA-256 of the data, not the data, so erasing an entry's data in place
-- (`erased_at`) leaves the chain verifiable. Entries written before keep a null data_hash
-- (version 1: their link covers the data itself). The indexes serve erasure by customer and
-- retention by age, each holding only the rows its query can pick: finished sessions,
-- decided requests, ended runs, audit entries whose data is still readable.

ALTER TABLE audit ADD COLUMN data_hash bytea;
ALTER TABLE audit ADD COLUMN erased_at text COLLATE "C";
CREATE INDEX audit_readable_by_at ON audit (at, seq) WHERE erased_at IS NULL;
CREATE INDEX audit_by_request ON audit (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX sessions_by_principal ON sessions (principal) WHERE principal IS NOT NULL;
CREATE INDEX sessions_finished ON sessions (updated_at, id) WHERE batch IS NULL;
CREATE INDEX approvals_by_customer ON approvals (customer) WHERE customer IS NOT NULL;
CREATE INDEX approvals_finished_by_created ON approvals (created_at, id) WHERE status <> 'pending';
CREATE INDEX workflow_runs_ended ON workflow_runs (updated_at, id)
  WHERE status IN ('completed', 'failed', 'expired');
