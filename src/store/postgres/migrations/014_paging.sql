-- lists (number 014 in the merge plan), as SQLite's migration of the same name: every list
-- is a keyset page over an index in its order, (key, id), so page 1,000 reads what page 1
-- does. The decision's time, decider and kind get plain columns (the decision itself stays
-- a codec payload) for the history order and /v1/stats; rows decided before are filled in
-- from JSON decisions (a payload another codec wrote is left null). The audit's session
-- index gains seq, so a session-filtered audit cursor is one range walk.

ALTER TABLE approvals ADD COLUMN decided_at text COLLATE "C";
ALTER TABLE approvals ADD COLUMN decided_by text COLLATE "C";
ALTER TABLE approvals ADD COLUMN decided_kind text COLLATE "C";
UPDATE approvals
SET decided_at = (decision::jsonb) ->> 'at', decided_by = (decision::jsonb) ->> 'by',
  decided_kind = (decision::jsonb) ->> 'kind'
WHERE decision LIKE '{%}';
DROP INDEX approvals_by_status;
CREATE INDEX approvals_by_status ON approvals (status, created_at, id);
DROP INDEX approvals_by_session;
CREATE INDEX approvals_by_session ON approvals (session, created_at, id);
DROP INDEX approvals_by_run;
CREATE INDEX approvals_by_run ON approvals (run, created_at, id) WHERE run IS NOT NULL;
CREATE INDEX approvals_by_created ON approvals (created_at, id);
CREATE INDEX approvals_decided ON approvals (decided_at, id)
  INCLUDE (status, decided_kind, decided_by, kind, tool, required_role, created_at)
  WHERE decided_at IS NOT NULL;
DROP INDEX audit_by_session;
CREATE INDEX audit_by_session ON audit (session, seq);

-- The stalled-session sweep becomes a "next due" query: `sessions.continue_due` is set while
-- a session's open batch has no pending request left (decided, not yet continued), kept by
-- triggers on the writes that change it (a request raised or decided, the batch set or
-- cleared), so no write path and no round trip changes. Its partial index holds only those
-- sessions, normally a handful in flight, instead of every session waiting for a person.
-- The functions keep the migration's search_path (the store's schema).
ALTER TABLE sessions ADD COLUMN continue_due boolean;
UPDATE sessions s SET continue_due = true WHERE s.batch IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = s.id AND a.status = 'pending');
DROP INDEX sessions_with_open_batch;
CREATE INDEX sessions_continue_due ON sessions (updated_at, id) WHERE continue_due IS NOT NULL;
-- The ledger's list is a keyset page too (listExecutions with after and limit).
CREATE INDEX executions_by_started ON executions (started_at, request_id);

CREATE FUNCTION approvals_continue_due() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE sessions SET continue_due = NULL WHERE id = NEW.session AND continue_due IS NOT NULL;
  ELSE
    UPDATE sessions SET continue_due = true
    WHERE id = NEW.session AND batch IS NOT NULL AND continue_due IS NULL
      AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = NEW.session AND a.status = 'pending');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER approvals_raised_hold AFTER INSERT ON approvals
  FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION approvals_continue_due();
CREATE TRIGGER approvals_decided_due AFTER UPDATE OF status ON approvals
  FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending') EXECUTE FUNCTION approvals_continue_due();

-- Deferred to COMMIT: a step updates the session before it inserts the requests it raises,
-- so the flag is computed once, from the transaction's final rows, and written only when it
-- changes (a raise leaves it NULL without touching the row again).
CREATE FUNCTION sessions_continue_due() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  due boolean;
BEGIN
  SELECT CASE
      WHEN s.batch IS NULL THEN NULL
      WHEN EXISTS (SELECT 1 FROM approvals a WHERE a.session = s.id AND a.status = 'pending') THEN NULL
      ELSE true END
    INTO due FROM sessions s WHERE s.id = NEW.id;
  UPDATE sessions SET continue_due = due WHERE id = NEW.id AND continue_due IS DISTINCT FROM due;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER sessions_batch_due AFTER UPDATE OF batch ON sessions
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD.batch IS DISTINCT FROM NEW.batch) EXECUTE FUNCTION sessions_continue_due();
CREATE CONSTRAINT TRIGGER sessions_inserted_due AFTER INSERT ON sessions
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.batch IS NOT NULL) EXECUTE FUNCTION sessions_continue_due();
