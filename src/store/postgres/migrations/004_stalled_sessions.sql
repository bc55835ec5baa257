-- What the stalled-session sweep reads on every pass (listStalledSessions), as SQLite's
-- migration 4. Both indexes are partial, so they hold only the rare rows the sweep looks for:
-- sessions with an open batch (those waiting for a decision or being continued), and ledger
-- rows whose outcome is unknown. A finished session or a settled call costs them nothing.
-- Ordered like the query, so LIMIT stops the walk early.

CREATE INDEX sessions_with_open_batch ON sessions (updated_at, id) WHERE batch IS NOT NULL;
CREATE INDEX executions_unknown ON executions (session) WHERE status = 'unknown';
