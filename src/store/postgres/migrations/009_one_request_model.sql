-- The one request model, as SQLite's migration 9: a workflow's port requests are rows of
-- `approvals` too (kind 'port', session `wf.<run>`, which is no agent session, so the
-- foreign key to sessions goes). `run` ties a row to its workflow run; `customer` and
-- `required_role` are the parties separation of duties is judged by (a tool call's customer
-- is its session's principal, filled in here). A port answer's response travels in
-- `decision`, through the codec. `approvals_due` serves the expiry sweep, `approvals_by_run`
-- the requests of one run. Pending port requests in checkpoints written before, and the
-- answers in `workflow_answers`, are adopted into rows when the store opens
-- (adopt-legacy-requests.ts: the hash is of canonical JSON, computed in TypeScript), which
-- then drops `workflow_answers`.

ALTER TABLE approvals DROP CONSTRAINT IF EXISTS approvals_session_fkey;
ALTER TABLE approvals ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT 'tool-call';
ALTER TABLE approvals ADD COLUMN run text COLLATE "C";
ALTER TABLE approvals ADD COLUMN customer text COLLATE "C";
ALTER TABLE approvals ADD COLUMN required_role text COLLATE "C";
UPDATE approvals a SET customer = s.principal FROM sessions s WHERE s.id = a.session;
CREATE INDEX approvals_due ON approvals (expires_at, id) WHERE status = 'pending';
CREATE INDEX approvals_by_run ON approvals (run) WHERE run IS NOT NULL;
