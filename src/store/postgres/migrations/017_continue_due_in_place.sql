-- The stalled-session flag (014_paging.sql), kept for less. Every decision continues its
-- session, and continuing clears the batch; 014's deferred trigger then ran at COMMIT, read the
-- session again and wrote it a second time (a new row version, and new entries in every index
-- of sessions, since continue_due is indexed). Together with the decision's trigger that was
-- about a quarter of PostgreSQL's CPU per HTTP decision (docs/benchmarks.md).
--
-- A batch cleared now clears the flag in the row being written: a BEFORE trigger that sets
-- NEW.continue_due, with no statement of its own and no second row version. The deferred
-- trigger still runs where it must see the transaction's final rows: when a batch opens or
-- changes (a step updates the session before it inserts the requests it raises).
--
-- The flag means what it meant: set while the session's open batch has no pending request.
-- A cleared batch has no open batch, so the flag is null, whichever transaction clears it.
-- SQLite keeps its triggers as they are: they run in the process, and it has no number 017.
CREATE FUNCTION sessions_batch_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.continue_due := NULL;
  RETURN NEW;
END $$;
CREATE TRIGGER sessions_batch_closed BEFORE UPDATE OF batch ON sessions
  FOR EACH ROW WHEN (NEW.batch IS NULL AND OLD.continue_due IS NOT NULL)
  EXECUTE FUNCTION sessions_batch_closed();

DROP TRIGGER sessions_batch_due ON sessions;
CREATE CONSTRAINT TRIGGER sessions_batch_due AFTER UPDATE OF batch ON sessions
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.batch IS NOT NULL AND OLD.batch IS DISTINCT FROM NEW.batch)
  EXECUTE FUNCTION sessions_continue_due();
