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
  /**
   * Whether the principal still has a key `forget` would destroy. The erasure's audit entry
   * commits with the rows, before the key goes, and says whether it goes; without this the
   * entry says so whenever a forgetter is given.
   */
  holds?(principal: string): Promise<boolean>;
}

/**
 * The application-state namespace where an erasure under way keeps, per principal, the
 * workflow runs whose keys it destroys last: once their rows are removed, nothing else says
 * which runs were the customer's, so a rerun after a crash reads them from here.
 */
export const ERASURE_INTENTS = 'countersign.erasure';

/**
 * What `ERASURE_INTENTS` holds for a principal while their erasure is under way: the runs of
 * each store apart, because each store's keyring destroys the keys of its own runs.
 */
interface ErasureIntent {
  /** Runs of the main store (`store`, or `checkpoints` when there is no store). */
  runs: string[];
  /** Runs of a separate `checkpoints` store. */
  checkpointRuns: string[];
  since: string;
}

type RunList = 'runs' | 'checkpointRuns';

/**
 * Each run once, in order: lists are compared as sets, so a record holding a run twice
 * cannot stand in for a run it lacks.
 */
function normalRuns(runs: readonly unknown[]): string[] {
  return [...new Set(runs.filter((run): run is string => typeof run === 'string'))].sort();
}

const sameRuns = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((run, index) => run === b[index]);

function intentOf(value: unknown): ErasureIntent | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { runs, checkpointRuns, since } = value as Record<string, unknown>;
  if (!Array.isArray(runs) || typeof since !== 'string') return null;
  // A record written before runs were kept per store lists the main store's only.
  const separate = Array.isArray(checkpointRuns) ? normalRuns(checkpointRuns) : [];
  return { runs: normalRuns(runs), checkpointRuns: separate, since };
}

/** A store the erasure removes rows from, and what destroys the keys that sealed them. */
interface Book {
  store: Store | CheckpointStore;
  keys: DataKeyForgetter | null;
  /** Where the intent (step 2) lists this store's runs. */
  runsIn: RunList;
  /** The runs whose keys `keys` destroys: this store's, and for the main store a separate one's too. */
  forgets: readonly RunList[];
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
   * With encryption on: whose data keys erasure destroys in `store` (in `checkpoints` when
   * `store` is null). Default: the keyring of a store opened with encryption keys
   * (src/crypto/), none for a plain store.
   */
  keys?: DataKeyForgetter;
  /** Where workflow runs live, when not in `store` (a file: store, a separate one). */
  checkpoints?: CheckpointStore;
  /**
   * The same for a separate `checkpoints` store: its runs and port requests are sealed by its
   * own keyring, not `store`'s. Default: the keyring it was opened with, if any.
   */
  checkpointKeys?: DataKeyForgetter;
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
 * Erases one customer (principal). This is the one place that orders the steps; the API
 * (erasure-routes.ts), the CLI (erasure-commands.ts) and the library all call it.
 *
 * 1. Their pending requests are expired, through `decide`, so none can be approved or run
 *    later (a request is never removed while it could still be approved).
 * 2. With encryption on, the workflow runs whose keys go last (those each store removes in
 *    step 4: `runsToErase`) are recorded (ERASURE_INTENTS) before anything is removed.
 * 3. The app's state keys of theirs are overwritten with null.
 * 4. Their rows are removed, and their audit entries' data erased in place, in one
 *    transaction per store, with a `principal.erased` entry of who, when, which principal and
 *    how much (no customer data). The chain still verifies.
 * 5. Then their data key, and their runs' keys, are destroyed, each through the keyring of
 *    the store that sealed them; then the record of step 2.
 * 6. Rows written for them between 4 and 5 (sealed with a key now gone) are removed too.
 *
 * Why keys last: a key destroyed while rows sealed with it remain leaves rows nobody can read
 * (messages, requests and decisions that decode as the erased marker, which no view or API
 * shape expects) until a rerun removes them; with the rows gone first, an interruption at
 * any step leaves either readable rows that a rerun removes, or no rows and a key a rerun
 * destroys. Copies the deletes leave behind (PostgreSQL's dead tuples, WAL, backups) stay
 * sealed with the key, which goes in step 5 before success is reported. Each step is safe to
 * repeat: running the same erasure again finishes an interrupted one, and its report counts
 * what that run removed and destroyed.
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
  // A separate store's runs have a key in the main store's keyring too: a checkpoint store
  // without a trail has the runner append the runs' entries to the main one, sealed there
  // with the run's key. Their rows are not the main store's to remove, so that key going is
  // what makes them unreadable (they read as erased, as audit data whose key is gone does).
  const books: Book[] = [
    {
      store: main,
      keys: options.keys ?? keyringOf(main),
      runsIn: 'runs',
      forgets: ['runs', 'checkpointRuns'],
    },
  ];
  if (separate !== null)
    books.push({
      store: separate,
      keys: options.checkpointKeys ?? keyringOf(separate),
      runsIn: 'checkpointRuns',
      forgets: ['checkpointRuns'],
    });

  // 1. Expire what still waits.
  const expired: string[] = [];
  const decidedFirst: string[] = [];
  for (const { store: book } of books) {
    for (const row of await book.listPendingOf(principal)) {
      if (await expireFirst(book, row, at)) expired.push(row.id);
      else decidedFirst.push(row.id);
    }
  }

  // 2. The runs whose keys go last: those each store removes in step 4, found now while
  // their rows still say whose they are (a run found only through a request already decided
  // too), with those an interrupted earlier run recorded (its rows may be gone already).
  const runs: Record<RunList, string[]> = { runs: [], checkpointRuns: [] };
  let intent: ErasureIntent | null = null;
  if (books.some(({ keys }) => keys?.forgetRun !== undefined)) {
    intent = intentOf(await main.getState(ERASURE_INTENTS, principal));
    for (const { store: book, runsIn } of books)
      runs[runsIn] = normalRuns([...(intent?.[runsIn] ?? []), ...(await book.runsToErase(principal))]);
    const changed =
      intent === null ||
      !sameRuns(runs.runs, intent.runs) ||
      !sameRuns(runs.checkpointRuns, intent.checkpointRuns);
    if (runs.runs.length + runs.checkpointRuns.length > 0 && changed) {
      intent = { ...runs, since: intent?.since ?? at };
      await main.setState(ERASURE_INTENTS, principal, { ...intent });
    }
  }

  // 3. The app's state keys of theirs. One already null was overwritten by an earlier run.
  let stateKeys = 0;
  for (const { namespace, key } of options.state ?? []) {
    const value = await main.getState(namespace, key);
    if (value === undefined || value === null) continue;
    await main.setState(namespace, key, null);
    stateKeys += 1;
  }

  // 4. The rows, the trail's entry with them. The entry says whether the key goes (step 5).
  let keyGoes = false;
  for (const { keys } of books)
    if (keys !== null && (keys.holds === undefined || (await keys.holds(principal)))) keyGoes = true;
  /** Removes their rows from every store, with one `principal.erased` entry unless `quiet`. */
  const removeRows = async (
    quiet: (total: ErasureCounts) => boolean,
    facts: { stateKeys: number; keyForgotten: boolean },
  ) => {
    const inSeparate = separate === null ? ZERO : await separate.erasePrincipal({ principal, at });
    const event = (total: ErasureCounts): AuditEvent[] =>
      quiet(total)
        ? []
        : [
            {
              kind: 'principal.erased',
              session: null,
              requestId: null,
              actor: options.by,
              data: { principal, ...total, ...facts },
            },
          ];
    return add(
      inSeparate,
      await main.erasePrincipal({ principal, at, audit: (own) => event(add(inSeparate, own)) }),
    );
  };
  let counts = await removeRows((total) => nothing(total) && !keyGoes && stateKeys === 0, {
    stateKeys,
    keyForgotten: keyGoes,
  });

  // 5. The keys, now that nothing sealed with them is left to read; then the record of step 2.
  let keyForgotten = false;
  for (const { keys, forgets } of books) {
    if (keys === null) continue;
    keyForgotten = (await keys.forget(principal)) || keyForgotten;
    if (keys.forgetRun === undefined) continue;
    for (const run of new Set(forgets.flatMap((list) => runs[list])))
      keyForgotten = (await keys.forgetRun(run)) || keyForgotten;
  }
  if (intent !== null) await main.setState(ERASURE_INTENTS, principal, null);

  // 6. Rows written for them while steps 4 and 5 ran (the customer still chatting) are sealed
  // with a key step 5 destroyed: removed too, so no reader meets a row it cannot open. What is
  // written from here on is sealed with a new key, as after any erasure.
  if (keyForgotten) counts = add(counts, await removeRows(nothing, { stateKeys: 0, keyForgotten: false }));

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
