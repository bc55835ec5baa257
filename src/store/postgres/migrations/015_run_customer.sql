-- runs (number 015 in the merge plan), as SQLite's migration of the same name: a run knows its
-- customer in clear, and lists of runs are keyset pages. `workflow_runs.customer` is who the
-- run was started for (its origin), so erasure finds a customer's runs by index, also those
-- that raised no request naming them. Existing runs are filled in from what SQL can read: the
-- origin in a plain JSON checkpoint body, else the customer of a request the run raised. A
-- body the encrypting codec sealed cannot be read here: such a run with no request naming a
-- customer stays NULL until its next checkpoint, which fills it in (saveCheckpoint: COALESCE).
-- One index per filter of a page, each in the page's order (created_at, id), so a page reads
-- about `limit` rows.

ALTER TABLE workflow_runs ADD COLUMN customer text COLLATE "C";
-- The cast is in SET, which only rows passing WHERE reach: a sealed body is never cast.
UPDATE workflow_runs r SET customer = CASE
    WHEN jsonb_typeof((c.body::jsonb) #> '{state,origin,customer}') = 'string'
    THEN (c.body::jsonb) #>> '{state,origin,customer}' END
FROM workflow_checkpoints c
WHERE c.id = r.latest AND c.body LIKE '{%}';
UPDATE workflow_runs r SET customer = (
  SELECT a.customer FROM approvals a
  WHERE a.run = r.id AND a.customer IS NOT NULL ORDER BY a.created_at, a.id LIMIT 1)
WHERE r.customer IS NULL;
CREATE INDEX workflow_runs_by_created ON workflow_runs (created_at, id);
CREATE INDEX workflow_runs_by_status ON workflow_runs (status, created_at, id);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow, created_at, id);
CREATE INDEX workflow_runs_by_customer ON workflow_runs (customer, created_at, id) WHERE customer IS NOT NULL;
