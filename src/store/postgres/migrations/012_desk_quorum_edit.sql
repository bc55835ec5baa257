-- desk (issue 13), as SQLite's migration 12: the effect preview is bound by its hash like
-- the arguments (null in rows written before: not checked); the argument fields a person may
-- edit (a JSON array of names); a quorum's size and its approvals so far (through the codec),
-- the edited call those approvals are for, and the revision recordApproval compares and
-- bumps. Columns with defaults: existing rows read as one approver, no edit.

ALTER TABLE approvals ADD COLUMN effect_hash text COLLATE "C";
ALTER TABLE approvals ADD COLUMN editable text NOT NULL DEFAULT '[]';
ALTER TABLE approvals ADD COLUMN approvals_needed integer NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN partial_approvals text;
ALTER TABLE approvals ADD COLUMN pending_edit text;
ALTER TABLE approvals ADD COLUMN revision integer NOT NULL DEFAULT 0;
