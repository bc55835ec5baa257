-- A workflow request that expired is answered by countersign with this flag (and a null
-- response), through the same answer-once primary key as a person's answer. As SQLite's
-- migration 5.

ALTER TABLE workflow_answers ADD COLUMN expired boolean NOT NULL DEFAULT false;
