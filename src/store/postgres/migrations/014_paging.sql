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
CREATE INDEX approvals_decided ON approvals (decided_at, id) WHERE decided_at IS NOT NULL;
DROP INDEX audit_by_session;
CREATE INDEX audit_by_session ON audit (session, seq);
