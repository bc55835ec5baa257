import { expireRequest } from '../agent/session-run.ts';
import { type ApprovalRequest, type Decision, EXPIRED_REASON } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { userIdPattern } from '../core/ids.ts';
import { keyringOf } from '../crypto/encrypted-store.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { ErasureCounts } from '../store/ports/erasure.ts';
import type { Store } from '../store/store.ts';
import { portExpiryEvent } from '../workflow/port-expiry-event.ts';

/**
 * What erasure needs of encryption at rest: destroying the principal's data key (the keyring
 * of src/crypto/). `true` when there was a key to destroy.
 */
export interface DataKeyForgetter {
  forget(principal: string): Promise<boolean>;
  /** Destroys a workflow run's own data key (its checkpoints are sealed with it). */
  forgetRun?(run: string): Promise<boolean>;
}

/** One application-state entry (namespace and key, as `AppState` takes them). */
export interface StateKey {
  namespace: string;
  key: string;
}

export interface EraseOptions {
  /** Who erases (audited as the actor). */
  by: string;
  /**
   * With encryption on: whose data keys erasure destroys. Default: the keyring of a store
   * opened with encryption keys (src/crypto/), none for a plain store.
   */
  keys?: DataKeyForgetter;
  /** Where workflow runs live, when not in `store` (a file: store, a separate one). */
  checkpoints?: CheckpointStore;
  /**
   * Application-state keys that hold this customer's data (the app's `customerState`): each
   * that exists is overwritten with null. countersign cannot tell whose a key is by itself.
   */
  state?: readonly StateKey[];
  now?: Date;
}

export interface ErasureReport {
  principal: string;
  at: string;
  by: string;
  /** False when nothing named the principal and no key was destroyed ("nothing to erase"). */
  erased: boolean;
  keyForgotten: boolean;
  /** Pending requests this erasure expired first (the decision compare-and-set). */
  expired: string[];
  /** Pending requests a person decided first, while the erasure ran: removed all the same. */
  decidedFirst: string[];
  counts: ErasureCounts;
  /** Application-state keys (of `options.state`) that held a value and were overwritten. */
  stateKeys: number;
}

const ZERO: ErasureCounts = {
  sessions: 0,
  messages: 0,
  requests: 0,
  executions: 0,
  runs: 0,
  checkpoints: 0,
  auditEntries: 0,
  deliveries: 0,
};

function add(a: ErasureCounts, b: ErasureCounts): ErasureCounts {
  const sum = { ...a };
  for (const key of Object.keys(sum) as (keyof ErasureCounts)[]) sum[key] += b[key];
  return sum;
}

const nothing = (counts: ErasureCounts) => Object.values(counts).every((n) => n === 0);

/** The runs a book keeps for `principal`, from its index of runs by customer (page by page). */
async function runsOf(book: Store | CheckpointStore, principal: string): Promise<string[]> {
  if (!('pageRuns' in book) || typeof book.pageRuns !== 'function') return [];
  const runs: string[] = [];
  let after: string | undefined;
  do {
    const page = await book.pageRuns({ customer: principal, limit: 1000, ...(after ? { after } : {}) });
    runs.push(...page.items.map((item) => item.run));
    after = page.next ?? undefined;
  } while (after !== undefined);
  return runs;
}

/** Expires one pending request through the one decision compare-and-set; false if it lost. */
async function expireFirst(
  book: Store | CheckpointStore,
  row: ApprovalRequest,
  at: string,
): Promise<boolean> {
  if (row.kind === 'tool-call' && 'commitStep' in book) return expireRequest(book, row, at);
  const decision: Decision = {
    verdict: 'expired',
    by: 'countersign',
    reason: EXPIRED_REASON,
    at,
    kind: 'expiry',
  };
  const outcome = await book.decide(row.id, decision, [portExpiryEvent(row)]);
  return outcome.won;
}

/**
 * Erases one customer (principal): their pending requests are expired first, through
 * `decide`, so none can be approved or run later; then their data key is destroyed (with
 * encryption on); then everything written for them is removed, and their audit entries'
 * data erased in place, in one transaction per store, with a `principal.erased` entry of
 * who, when, which principal and how much (no customer data). The chain still verifies.
 *
 * An id nothing names is "nothing to erase" (`erased: false`), not an error, so erasing
 * twice is safe; a malformed id is INVALID_INPUT. `store` is null for a store of workflow
 * runs only (COUNTERSIGN_STORE=file:): then `checkpoints` is erased, with no trail to audit in.
 */
export async function erasePrincipal(
  store: Store | null,
  principal: string,
  options: EraseOptions,
): Promise<ErasureReport> {
  if (!userIdPattern.test(principal)) {
    throw new InvalidInputError(`"${principal}" is not a customer id.`, {
      hint: 'Give the id sessions were started with (--user on chat, `customer` on a run).',
    });
  }
  const at = (options.now ?? new Date()).toISOString();
  const main: Store | CheckpointStore | undefined = store ?? options.checkpoints;
  if (main === undefined) throw new TypeError('erasePrincipal needs a store or `checkpoints`.');
  const separate =
    store !== null && options.checkpoints !== undefined && options.checkpoints !== (store as unknown)
      ? options.checkpoints
      : null;
  const books: (Store | CheckpointStore)[] = separate === null ? [main] : [main, separate];

  const expired: string[] = [];
  const decidedFirst: string[] = [];
  for (const book of books) {
    for (const row of await book.listPendingOf(principal)) {
      if (await expireFirst(book, row, at)) expired.push(row.id);
      else decidedFirst.push(row.id);
    }
  }

  // The keys first: once they are gone nothing of theirs can be read, even if a write below
  // fails, nor any copy the deletes leave behind (PostgreSQL's dead tuples, WAL, backups). A
  // run's checkpoints are sealed with the run's own key, so their runs' keys go too.
  const keys = options.keys ?? keyringOf(main);
  let keyForgotten = (await keys?.forget(principal)) ?? false;
  if (keys?.forgetRun !== undefined) {
    for (const book of books) {
      for (const run of await runsOf(book, principal))
        keyForgotten = (await keys.forgetRun(run)) || keyForgotten;
    }
  }

  let stateKeys = 0;
  for (const { namespace, key } of options.state ?? []) {
    if ((await main.getState(namespace, key)) === undefined) continue;
    await main.setState(namespace, key, null);
    stateKeys += 1;
  }

  let counts = separate === null ? ZERO : await separate.erasePrincipal({ principal, at });
  const event = (total: ErasureCounts): AuditEvent[] =>
    nothing(total) && !keyForgotten && stateKeys === 0
      ? []
      : [
          {
            kind: 'principal.erased',
            session: null,
            requestId: null,
            actor: options.by,
            data: { principal, ...total, stateKeys, keyForgotten },
          },
        ];
  const before = counts;
  counts = add(before, await main.erasePrincipal({ principal, at, audit: (own) => event(add(before, own)) }));
  return {
    principal,
    at,
    by: options.by,
    erased: !nothing(counts) || keyForgotten || stateKeys > 0,
    keyForgotten,
    expired,
    decidedFirst,
    counts,
    stateKeys,
  };
}
