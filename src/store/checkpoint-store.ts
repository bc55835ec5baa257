import type { ApprovalRequest } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import type { JsonValue } from '../core/json.ts';
import type { AppState } from './ports/app-state.ts';
import type { PrincipalErasure, Retention } from './ports/erasure.ts';

export type { ClaimResult } from './ports/app-state.ts';

import type { PageTotal, RequestBook } from './ports/request-book.ts';

/**
 * `expired`: the run ended (nothing pending, nothing waiting) and at least one request on
 * its way ended it by expiring without an answer.
 */
export type RunStatus = 'running' | 'awaiting_input' | 'completed' | 'failed' | 'expired';

/** Every RunStatus, for the stores that check what they read back. */
export const RUN_STATUSES: readonly RunStatus[] = [
  'running',
  'awaiting_input',
  'completed',
  'failed',
  'expired',
];

/**
 * One workflow checkpoint as stores keep it. The header is what stores index and list; the
 * body (the run's state and the contract it was written under) is opaque to them and is
 * interpreted only by `src/workflow/`.
 */
export interface StoredCheckpoint {
  id: string;
  run: string;
  /** Position in the run's history, 0 for the first checkpoint; unique within a run. */
  seq: number;
  /** The checkpoint this one continues from; null only for a run's first checkpoint. */
  parent: string | null;
  superstep: number;
  createdAt: string;
  workflow: string;
  version: number;
  status: RunStatus;
  /**
   * The customer the run was started for (its origin), in clear: what erasure finds a run by
   * and lists filter on. Stores record it with the run's first checkpoint; a later
   * checkpoint only fills it in where the run has none yet (a run written before the column),
   * never changes it. Absent or null: no customer.
   */
  customer?: string | null;
  body: JsonValue;
}

export interface CheckpointSummary {
  checkpointId: string;
  parentCheckpointId: string | null;
  superstep: number;
  createdAt: string;
}

export interface RunSummary {
  run: string;
  workflow: string;
  version: number;
  status: RunStatus;
  /** The run's latest checkpoint. */
  checkpoint: string;
  /** The customer it was started for; null when none was given (or not known for an old run). */
  customer: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * The orders a page of runs can come in, both by when the run started (then by run id): a
 * keyset over one index per filter, so page 1,000 costs what page 1 does.
 */
export type RunSort = 'newest' | 'oldest';

/**
 * One page of runs. `status`, `workflow` and `customer` are exact matches (each has an index
 * in the page's order in SQLite and PostgreSQL). `after` is the `next` cursor of the page
 * before, for the same sort and filters (not `limit` or `count`); a cursor is opaque and a
 * malformed one (or one of another list or sort, or handed out under other filters) is
 * refused with INVALID_CURSOR.
 */
export interface RunPageQuery {
  status?: RunStatus;
  workflow?: string;
  customer?: string;
  /** `newest` when absent. */
  sort?: RunSort;
  after?: string;
  /** 1 to MAX_PAGE_LIMIT (1000). */
  limit: number;
  /** Count the matches too (capped at PAGE_COUNT_CAP, see RunPage.total). Default false. */
  count?: boolean;
}

export interface RunPage {
  items: RunSummary[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
  /** Present when the query asked for `count`: up to the cap, `exact` false beyond it. */
  total?: PageTotal;
}

/**
 * `saved: false` means another writer committed to the run after `expectedLatest` was read:
 * nothing was written, and `latest` is what is there now.
 */
export type SaveCheckpointResult =
  | { saved: true; checkpoint: StoredCheckpoint }
  | { saved: false; latest: StoredCheckpoint | null };

/**
 * What commits with a checkpoint, and only if it is saved. `audit`: a store that `keepsAudit`
 * links them onto its hash-chained trail in the same transaction; one that does not ignores
 * them (see `CheckpointStore.keepsAudit`). `requests`: the port requests the checkpoint
 * raises, as rows of the store's request book (kind `port`, pending), inserted in the same
 * transaction — a checkpoint never waits on a request that has no row, nor the reverse.
 */
export interface CheckpointWriteOptions {
  audit?: AuditEvent[];
  requests?: ApprovalRequest[];
}

/**
 * Where workflow runs live. A run is a chain (a tree, once forked) of checkpoints, each
 * linked to its parent; "latest" is the last one committed. Every backend (memory, SQLite,
 * the file store) passes the shared suite in `conformance/checkpoint-store-conformance.ts`.
 * Its request book holds the runs' port requests (answered with `decide`, verdict
 * `answered`); in SQLite and PostgreSQL it is the agents' own, one table for both kinds.
 *
 * Application state that workflow executors read and change (e.g. the bookstore's refunds)
 * is the `AppState` port, the same one tools use through `Store`.
 */
/**
 * `PrincipalErasure` and `Retention` cover what the store keeps: for a store of runs only
 * (memory, files) that is runs, their checkpoints and port requests.
 */
export interface CheckpointStore extends AppState, RequestBook, PrincipalErasure, Retention {
  readonly kind: string;
  /**
   * True when this store is also the agents' `Store` with its hash-chained audit trail (SQLite,
   * PostgreSQL): `options.audit` given to `saveCheckpoint` and `decide` is appended in
   * the same transaction as the write, and only when the write happens. False (memory, files):
   * the store has no audit trail and ignores `options.audit`; the runner appends to the trail
   * it was given (`WorkflowRunnerOptions.audit`) after the write instead.
   */
  readonly keepsAudit: boolean;

  /**
   * Commits a checkpoint only if the run's latest checkpoint is still `expectedLatest`
   * (null: the run must not exist yet). `checkpoint.seq` must be the latest's seq + 1 (0 for
   * the first). This is what keeps two processes continuing one run from both appending.
   * `options.audit` (at `checkpoint.createdAt`) and `options.requests` commit with a saved
   * checkpoint only.
   */
  saveCheckpoint(
    checkpoint: StoredCheckpoint,
    expectedLatest: string | null,
    options?: CheckpointWriteOptions,
  ): Promise<SaveCheckpointResult>;
  /**
   * Inserts each row unless one with its id exists: the pending port requests of a
   * checkpoint written before port requests were rows, adopted when the runner first meets
   * them (stores also adopt what they find when they open). Rows that exist are left as they are.
   */
  adoptRequests(requests: ApprovalRequest[]): Promise<void>;
  getCheckpoint(run: string, checkpointId: string): Promise<StoredCheckpoint | null>;
  latestCheckpoint(run: string): Promise<StoredCheckpoint | null>;
  /** Every checkpoint of the run in commit order, branches included. */
  checkpointHistory(run: string): Promise<CheckpointSummary[]>;
  /**
   * Every run with the status of its latest checkpoint, oldest first: for exports and tests
   * that truly need all. Lists and anything on a timer page with `pageRuns`.
   */
  listRuns(): Promise<RunSummary[]>;
  /**
   * One page of runs in `query.sort` order after the cursor `query.after`. SQL backends walk
   * an index in that order (keyset: `(created_at, id) < (cursor)`), so a page reads about
   * `limit` rows whatever the number of runs; the memory and file stores page what they hold.
   */
  pageRuns(query: RunPageQuery): Promise<RunPage>;

  close(): Promise<void>;
}

export function isCheckpointStore(value: unknown): value is CheckpointStore {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { saveCheckpoint?: unknown }).saveCheckpoint === 'function' &&
    typeof (value as { latestCheckpoint?: unknown }).latestCheckpoint === 'function' &&
    typeof (value as { decide?: unknown }).decide === 'function'
  );
}
