/**
 * Schema history, applied in order; `PRAGMA user_version` records how many have run.
 * A published migration is never edited: a change to the schema is a new entry.
 *
 * Sizes matter (a step's write must stay close to the bytes it logically adds): message
 * bodies are stored once, indexes never cover payload columns, hashes are 32-byte blobs,
 * and `approvals.args_json` is the only copy of a request's arguments.
 */
export const migrations: readonly string[] = [
  `
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    principal TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    batch TEXT,
    lease_owner TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0
  );

  CREATE TABLE messages (
    session TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, seq)
  );

  CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL REFERENCES sessions(id),
    agent TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_json TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    effect TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL,
    decision TEXT
  );
  CREATE INDEX approvals_by_status ON approvals (status, created_at);
  CREATE INDEX approvals_by_session ON approvals (session);

  CREATE TABLE executions (
    request_id TEXT PRIMARY KEY,
    session TEXT NOT NULL REFERENCES sessions(id),
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    attempts INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT
  );
  CREATE INDEX executions_by_session ON executions (session);

  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    session TEXT,
    request_id TEXT,
    actor TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash BLOB NOT NULL,
    hash BLOB NOT NULL
  );
  CREATE INDEX audit_by_session ON audit (session);

  CREATE TABLE state (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
  ) WITHOUT ROWID;
  `,
  `
  CREATE TABLE rules (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL REFERENCES sessions(id),
    tool TEXT NOT NULL,
    tool_identity TEXT NOT NULL,
    args_hash TEXT,
    source_request TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    revoked_at TEXT,
    revoked_by TEXT
  );
  CREATE INDEX rules_by_session ON rules (session);
  `,
  `
  CREATE TABLE workflow_runs (
    id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    latest TEXT NOT NULL,
    latest_seq INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );

  CREATE TABLE workflow_checkpoints (
    id TEXT PRIMARY KEY,
    run TEXT NOT NULL REFERENCES workflow_runs(id),
    seq INTEGER NOT NULL,
    parent TEXT,
    superstep INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    workflow TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run, seq)
  );

  CREATE TABLE workflow_answers (
    run TEXT NOT NULL,
    request_id TEXT NOT NULL,
    response TEXT NOT NULL,
    answered_by TEXT NOT NULL,
    answered_at TEXT NOT NULL,
    PRIMARY KEY (run, request_id)
  ) WITHOUT ROWID;
  `,
  // The stalled-session sweep (listStalledSessions) reads these on every pass. Partial, so
  // they hold only sessions with an open batch and ledger rows of unknown outcome: a
  // finished session or a settled call adds nothing to them.
  `
  CREATE INDEX sessions_with_open_batch ON sessions (updated_at, id) WHERE batch IS NOT NULL;
  CREATE INDEX executions_unknown ON executions (session) WHERE status = 'unknown';
  `,
  // A workflow request that expired is answered by countersign with this flag (and a null
  // response), through the same answer-once primary key as a person's answer.
  `
  ALTER TABLE workflow_answers ADD COLUMN expired INTEGER NOT NULL DEFAULT 0;
  `,
  // The delivery outbox (webhooks). `next_at` (epoch ms) is when a pending row is due: its
  // retry time, or the end of its current claim. The partial index holds only pending rows,
  // so claiming due ones walks a handful of entries however many were delivered.
  `
  CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    claimed_by TEXT,
    last_error TEXT,
    finished_at TEXT
  );
  CREATE INDEX deliveries_due ON deliveries (next_at) WHERE status = 'pending';
  `,
  // Inbox sign-ins, shared by every process on the file: the SHA-256 of the cookie value
  // (never the value), the approver's name (roles come from the server's configuration on
  // every request) and the expiry in epoch ms, indexed for pruning expired rows.
  `
  CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    approver TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
  `,
  // Who raised each request (the caller that posted the message), for separation of duties:
  // they may not decide it. Null in rows written before: only the customer check applies.
  `
  ALTER TABLE approvals ADD COLUMN raised_by TEXT;
  `,
  // The one request model: a workflow's port requests are rows here too (kind 'port',
  // session `wf.<run>`, which is no agent session: the table is rebuilt without that foreign
  // key). `run` ties a row to its workflow run, `customer` and `required_role` are the
  // parties separation of duties is judged by (a tool call's customer is its session's
  // principal, filled in here). A port answer's response travels in `decision`, through the
  // codec. `approvals_due` serves the expiry sweep (pending rows by expiry, nothing else);
  // `approvals_by_run` the requests of one run. Pending port requests of checkpoints written
  // before, and answers recorded in `workflow_answers`, are adopted into rows when the store
  // opens (legacy-requests.ts: that needs the codec), which then drops `workflow_answers`.
  `
  CREATE TABLE approvals_v9 (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    agent TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_json TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    effect TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL,
    decision TEXT,
    raised_by TEXT,
    kind TEXT NOT NULL DEFAULT 'tool-call',
    run TEXT,
    customer TEXT,
    required_role TEXT
  );
  INSERT INTO approvals_v9 (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at,
    expires_at, status, decision, raised_by, kind, run, customer, required_role)
  SELECT a.id, a.session, a.agent, a.call_id, a.tool, a.args_json, a.args_hash, a.effect, a.created_at,
    a.expires_at, a.status, a.decision, a.raised_by, 'tool-call', NULL, s.principal, NULL
  FROM approvals a LEFT JOIN sessions s ON s.id = a.session;
  DROP TABLE approvals;
  ALTER TABLE approvals_v9 RENAME TO approvals;
  CREATE INDEX approvals_by_status ON approvals (status, created_at);
  CREATE INDEX approvals_by_session ON approvals (session);
  CREATE INDEX approvals_due ON approvals (expires_at, id) WHERE status = 'pending';
  CREATE INDEX approvals_by_run ON approvals (run) WHERE run IS NOT NULL;
  `,
  // Wrapped data keys of the encrypting codec (src/crypto/): one live key per owner (principal,
  // session, run or the store), wrapped by the key-encryption key named in kek_id. A forgotten
  // key keeps its row without the key, so values naming it decode as erased, not as damage.
  `
  CREATE TABLE data_keys (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    kek_id TEXT,
    wrapped TEXT,
    created_at TEXT NOT NULL,
    forgotten_at TEXT
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX data_keys_live ON data_keys (owner) WHERE wrapped IS NOT NULL;
  `,
  // Erasure and retention. \`data_hash\` is entry hashing version 2: the link covers the
  // SHA-256 of the data, not the data, so erasing an entry's data in place (\`erased_at\`)
  // leaves the chain verifiable. Entries written before keep a null data_hash (version 1:
  // their link covers the data itself). The indexes serve erasure by customer and retention
  // by age, each holding only rows its query can pick: finished sessions, decided requests,
  // ended runs, audit entries whose data is still readable.
  `
  ALTER TABLE audit ADD COLUMN data_hash BLOB;
  ALTER TABLE audit ADD COLUMN erased_at TEXT;
  CREATE INDEX audit_readable_by_at ON audit (at, seq) WHERE erased_at IS NULL;
  CREATE INDEX audit_by_request ON audit (request_id) WHERE request_id IS NOT NULL;
  CREATE INDEX sessions_by_principal ON sessions (principal) WHERE principal IS NOT NULL;
  CREATE INDEX sessions_finished ON sessions (updated_at, id) WHERE batch IS NULL;
  CREATE INDEX approvals_by_customer ON approvals (customer) WHERE customer IS NOT NULL;
  CREATE INDEX approvals_finished_by_created ON approvals (created_at, id) WHERE status <> 'pending';
  CREATE INDEX workflow_runs_ended ON workflow_runs (updated_at, id)
    WHERE status IN ('completed', 'failed', 'expired');
  `,
  // desk (issue 13): the effect preview is bound by its hash like the arguments (null in
  // rows written before: not checked); the argument fields a person may edit (a JSON array of
  // names); a quorum's size and its approvals so far (through the codec), the edited call
  // those approvals are for, and the revision recordApproval compares and bumps. Columns
  // with defaults: no table is rewritten, and existing rows read as one approver, no edit.
  `
  ALTER TABLE approvals ADD COLUMN effect_hash TEXT;
  ALTER TABLE approvals ADD COLUMN editable TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE approvals ADD COLUMN approvals_needed INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE approvals ADD COLUMN partial_approvals TEXT;
  ALTER TABLE approvals ADD COLUMN pending_edit TEXT;
  ALTER TABLE approvals ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
  `,
  // timers (number 13 in the merge order: crypt 10, erase 11, desk 12 come before it).
  // Who claims a request and until when; the role it was escalated to; its nudges (reminder,
  // escalation, expiry warning: times as JSON, no payload, so not through the codec) and the
  // next one's time, which `approvals_nudge_due` orders pending rows by for the nudge sweep's
  // due-query (rows with no nudge left are not in it).
  `
  ALTER TABLE approvals ADD COLUMN claim_by TEXT;
  ALTER TABLE approvals ADD COLUMN claim_until TEXT;
  ALTER TABLE approvals ADD COLUMN escalated_to TEXT;
  ALTER TABLE approvals ADD COLUMN nudges TEXT;
  ALTER TABLE approvals ADD COLUMN next_nudge_at TEXT;
  CREATE INDEX approvals_nudge_due ON approvals (next_nudge_at, id)
    WHERE status = 'pending' AND next_nudge_at IS NOT NULL;
  `,
  // lists (number 14 in the merge plan): every list is a keyset page over an index in its
  // order, (key, id), so page 1,000 reads what page 1 does. The decision's time, decider and
  // kind get plain columns (the decision itself stays a codec payload) for the history order
  // and /v1/stats; rows decided before are filled in from JSON decisions (a payload another
  // codec wrote stays null there and out of the history order). Old indexes keep their names
  // with the id added, so a tie on the time still has an order.
  //
  // The stalled-session sweep becomes a "next due" query: `sessions.continue_due` is set
  // while a session's open batch has no pending request left (decided, not yet continued),
  // kept by triggers on the writes that change it (a request raised or decided, the batch
  // set or cleared), so no backend write path changes. Its partial index holds only those
  // sessions, normally a handful in flight, instead of every session waiting for a person.
  `
  ALTER TABLE approvals ADD COLUMN decided_at TEXT;
  ALTER TABLE approvals ADD COLUMN decided_by TEXT;
  ALTER TABLE approvals ADD COLUMN decided_kind TEXT;
  UPDATE approvals SET decided_at = json_extract(decision, '$.at'), decided_by = json_extract(decision, '$.by'),
    decided_kind = json_extract(decision, '$.kind')
  WHERE decision IS NOT NULL AND json_valid(decision);
  DROP INDEX approvals_by_status;
  CREATE INDEX approvals_by_status ON approvals (status, created_at, id);
  DROP INDEX approvals_by_session;
  CREATE INDEX approvals_by_session ON approvals (session, created_at, id);
  DROP INDEX approvals_by_run;
  CREATE INDEX approvals_by_run ON approvals (run, created_at, id) WHERE run IS NOT NULL;
  CREATE INDEX approvals_by_created ON approvals (created_at, id);
  CREATE INDEX approvals_decided ON approvals
    (decided_at, id, status, decided_kind, decided_by, kind, tool, required_role, created_at)
    WHERE decided_at IS NOT NULL;
  ALTER TABLE sessions ADD COLUMN continue_due INTEGER;
  UPDATE sessions SET continue_due = 1 WHERE batch IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = sessions.id AND a.status = 'pending');
  DROP INDEX sessions_with_open_batch;
  CREATE INDEX sessions_continue_due ON sessions (updated_at, id) WHERE continue_due IS NOT NULL;
  CREATE INDEX executions_by_started ON executions (started_at, request_id);
  CREATE TRIGGER approvals_raised_hold AFTER INSERT ON approvals WHEN NEW.status = 'pending'
  BEGIN
    UPDATE sessions SET continue_due = NULL WHERE id = NEW.session AND continue_due IS NOT NULL;
  END;
  CREATE TRIGGER approvals_decided_due AFTER UPDATE OF status ON approvals
  WHEN OLD.status = 'pending' AND NEW.status <> 'pending'
  BEGIN
    UPDATE sessions SET continue_due = 1
    WHERE id = NEW.session AND batch IS NOT NULL AND continue_due IS NULL
      AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = NEW.session AND a.status = 'pending');
  END;
  CREATE TRIGGER sessions_batch_due AFTER UPDATE OF batch ON sessions WHEN OLD.batch IS NOT NEW.batch
  BEGIN
    UPDATE sessions SET continue_due = NULL
    WHERE id = NEW.id AND continue_due IS NOT NULL AND (NEW.batch IS NULL
      OR EXISTS (SELECT 1 FROM approvals a WHERE a.session = NEW.id AND a.status = 'pending'));
    UPDATE sessions SET continue_due = 1
    WHERE id = NEW.id AND continue_due IS NULL AND NEW.batch IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = NEW.id AND a.status = 'pending');
  END;
  CREATE TRIGGER sessions_inserted_due AFTER INSERT ON sessions WHEN NEW.batch IS NOT NULL
  BEGIN
    UPDATE sessions SET continue_due = 1
    WHERE id = NEW.id AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = NEW.id AND a.status = 'pending');
  END;
  `,
  // runs (number 15 in the merge plan): a run knows its customer in clear, and lists of runs
  // are keyset pages. `workflow_runs.customer` is who the run was started for (its origin), so
  // erasure finds a customer's runs by index, also those that raised no request naming them.
  // Existing runs are filled in from what SQL can read: the origin in a plain JSON checkpoint
  // body, else the customer of a request the run raised. A body the encrypting codec sealed
  // cannot be read here: such a run with no request naming a customer stays NULL until its
  // next checkpoint, which fills it in (saveCheckpoint: COALESCE). One index per filter of a
  // page, each in the page's order (created_at, id), so a page reads about `limit` rows.
  `
  ALTER TABLE workflow_runs ADD COLUMN customer TEXT;
  UPDATE workflow_runs SET customer = (
    SELECT json_extract(c.body, '$.state.origin.customer') FROM workflow_checkpoints c
    WHERE c.id = workflow_runs.latest AND json_valid(c.body)
      AND json_type(c.body, '$.state.origin.customer') = 'text');
  UPDATE workflow_runs SET customer = (
    SELECT a.customer FROM approvals a
    WHERE a.run = workflow_runs.id AND a.customer IS NOT NULL ORDER BY a.created_at, a.id LIMIT 1)
  WHERE customer IS NULL;
  CREATE INDEX workflow_runs_by_created ON workflow_runs (created_at, id);
  CREATE INDEX workflow_runs_by_status ON workflow_runs (status, created_at, id);
  CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow, created_at, id);
  CREATE INDEX workflow_runs_by_customer ON workflow_runs (customer, created_at, id) WHERE customer IS NOT NULL;
  `,
  // text search (number 16 in the merge plan, as PostgreSQL's 016): partial text matches
  // (`text`: the effect preview or the customer; `customer`) narrowed by a trigram index
  // instead of walking the list (text-search.ts). An FTS5 table with the trigram tokenizer,
  // keyed by the request's rowid and kept by triggers on every write that adds, removes or
  // changes a row. What it indexes is the view `approvals_searchable`, its external content:
  // a sealed preview (encryption at rest, `cs1t:` ciphertext) is null there, so its words
  // cannot be searched and its ciphertext is not indexed (request-page-sql.ts:
  // searchableEffect, which the page's LIKE applies too). The index stores no copy of the
  // text; a delete names the values the row was indexed with (the view's, computed from the
  // row), so a change to what is indexed must change the view and 'rebuild'. 'secure-delete'
  // removes a deleted row's trigrams from the index at once, so an erased customer's words
  // leave the file with the row (a contentless table keeps them until segments merge).
  // Existing rows are indexed here ('rebuild' reads the view).
  `
  CREATE VIEW approvals_searchable AS
  SELECT rowid AS request_rowid, CASE WHEN substr(effect, 1, 5) = 'cs1t:' THEN NULL ELSE effect END AS effect,
    customer
  FROM approvals;
  CREATE VIRTUAL TABLE approvals_search USING fts5(
    effect, customer, content = 'approvals_searchable', content_rowid = 'request_rowid', tokenize = 'trigram'
  );
  INSERT INTO approvals_search (approvals_search, rank) VALUES ('secure-delete', 1);
  INSERT INTO approvals_search (approvals_search) VALUES ('rebuild');
  CREATE TRIGGER approvals_search_insert AFTER INSERT ON approvals
  BEGIN
    INSERT INTO approvals_search (rowid, effect, customer)
    VALUES (NEW.rowid, CASE WHEN substr(NEW.effect, 1, 5) = 'cs1t:' THEN NULL ELSE NEW.effect END, NEW.customer);
  END;
  CREATE TRIGGER approvals_search_delete AFTER DELETE ON approvals
  BEGIN
    INSERT INTO approvals_search (approvals_search, rowid, effect, customer)
    VALUES ('delete', OLD.rowid, CASE WHEN substr(OLD.effect, 1, 5) = 'cs1t:' THEN NULL ELSE OLD.effect END,
      OLD.customer);
  END;
  CREATE TRIGGER approvals_search_update AFTER UPDATE OF effect, customer ON approvals
  BEGIN
    INSERT INTO approvals_search (approvals_search, rowid, effect, customer)
    VALUES ('delete', OLD.rowid, CASE WHEN substr(OLD.effect, 1, 5) = 'cs1t:' THEN NULL ELSE OLD.effect END,
      OLD.customer);
    INSERT INTO approvals_search (rowid, effect, customer)
    VALUES (NEW.rowid, CASE WHEN substr(NEW.effect, 1, 5) = 'cs1t:' THEN NULL ELSE NEW.effect END, NEW.customer);
  END;
  `,
];
