-- As SQLite's timers migration: who claims a request and until when, the role it was
-- escalated to, its nudges (reminder, escalation, expiry warning: times as JSON, no payload,
-- so not through the codec) and the next one's time, which `approvals_nudge_due` orders
-- pending rows by for the nudge sweep's due-query (rows with no nudge left are not in it).

ALTER TABLE approvals ADD COLUMN claim_by text COLLATE "C";
ALTER TABLE approvals ADD COLUMN claim_until text COLLATE "C";
ALTER TABLE approvals ADD COLUMN escalated_to text COLLATE "C";
ALTER TABLE approvals ADD COLUMN nudges text;
ALTER TABLE approvals ADD COLUMN next_nudge_at text COLLATE "C";
CREATE INDEX approvals_nudge_due ON approvals (next_nudge_at, id)
  WHERE status = 'pending' AND next_nudge_at IS NOT NULL;
