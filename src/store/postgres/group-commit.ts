import { AsyncResource } from 'node:async_hooks';
import type { AuditEvent } from '../../core/audit.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import type { Connection, FollowOn, Query, TransactionChain } from './connection.ts';
import { isInFailedTransaction, isLostConnectionError } from './pg-errors.ts';

/** Audit events a write wants linked onto the chain, stamped `at`. */
export interface AuditGroup {
  events: readonly AuditEvent[];
  at: string;
}

/** Where a write hands its audit events: they are linked once, after every write of the batch. */
export type AuditSink = (events: readonly AuditEvent[] | undefined, at: string) => void;

/**
 * One store write: its statements run on `query`, its audit events go to `audit`. It must be
 * safe to run again from the start (a retried or split batch runs it again) and must not
 * depend on anything committed by another write of the same batch.
 */
export type Write<T> = (query: Query, audit: AuditSink) => Promise<T>;

/** Links a transaction's audit groups; `closing`: its last statement carries the COMMIT. */
export type LinkAudit = (query: Query, groups: readonly AuditGroup[], closing?: boolean) => Promise<void>;

/**
 * What a write sends on its way to success, which decides how it shares a transaction. A
 * statement on a path that ends in a throw (a read that only explains a refusal) does not
 * count: a write that throws runs again alone, and that run's error is the one reported.
 * - `single`: one statement and no audit events. Alone, it runs in autocommit.
 * - `one`: at most one statement, then audit events if any. In a shared transaction such
 *   writes are started together and their statements go out one behind another without
 *   waiting for replies (pipelined): PostgreSQL runs them in the order sent, which is an
 *   order the concurrent callers could have seen, and a batch of them costs one round trip.
 * - `many`: statements that follow from the replies before them (a rule after its decision,
 *   a checkpoint's rows after its compare-and-set). It runs by itself, after every write
 *   before it in the batch settled, so nothing interleaves with it.
 */
export type WriteShape = 'single' | 'one' | 'many';

/** The shape of a write of one statement with `audit`'s events: `single` when there are none. */
export function oneStatement(audit: readonly AuditEvent[] | undefined): WriteShape {
  return audit === undefined || audit.length === 0 ? 'single' : 'one';
}

export interface GroupCommit {
  /**
   * Runs `write` in a transaction shared with the writes other requests of this process
   * started meanwhile, and resolves once that transaction committed. A `single` write joins
   * a shared transaction only while writes with audit events are in flight or waiting, and
   * otherwise runs at once in autocommit.
   */
  run<T>(write: Write<T>, shape: WriteShape): Promise<T>;
}

interface Entry {
  write: Write<unknown>;
  shape: WriteShape;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Writes one transaction takes at most: bounds how long its row locks are held. */
const MAX_BATCH = 32;

/**
 * Transactions of one process in flight at once. The next is queued behind the COMMIT of the
 * one before, on its connection (TransactionChain in connection.ts): its BEGIN and statements
 * leave in the same socket write as that COMMIT, and PostgreSQL runs them as soon as it is
 * done, without waiting for the reply to travel back and the next batch's statements to
 * travel out. Only one gathers at a time, so batches stay as large as before. On the HTTP
 * decision bench (16 clients, 2 cores) two in flight on separate connections gave 1.13x the
 * decisions/s of one on loopback and 1.08x with PostgreSQL 3.5 ms away; queued on one
 * connection, 1.17x that again, with 1.6 socket writes per decision instead of 2.4
 * (docs/benchmarks.md).
 */
const IN_FLIGHT = 2;

/**
 * SQLite's group commit on a pool. Every write that links audit events queues on the audit
 * head's row lock in PostgreSQL anyway, so running them one transaction each only adds
 * BEGIN, COMMIT, a link statement and a WAL flush per write. Here, while one transaction of this
 * process is running its writes, the writes that arrive wait; once it has queued its link and
 * COMMIT, the next transaction takes all of them, queues them behind that COMMIT on the same
 * connection, runs their statements in arrival order, links all their audit events with one
 * statement, and commits once. So at most two are in flight (IN_FLIGHT): one waiting for its
 * COMMIT, one running its writes after it. A write alone runs at once, so nothing waits that
 * would not have waited on the head lock.
 *
 * Why this is safe:
 * - Each caller hears back only after COMMIT: a result is never reported before it is durable.
 * - The batch is equivalent to running its writes one after another. The writes were
 *   concurrent (each caller still waiting), so any order is one the callers could have seen;
 *   each statement is a conditional statement re-checked against the rows as the earlier
 *   writes left them. Writes of one statement (WriteShape) are sent together and run in the
 *   order sent; a write of several runs by itself, so no other write's statement lands
 *   between two of its own.
 * - All or nothing stays per write: if a write throws (a lost compare-and-set that is an
 *   error, a duplicate id, a rule for another session), the whole transaction rolls back; that
 *   write runs again alone in its own transaction, so the error it reports is its own, and the
 *   others run again together, so one write's error never undoes or fails another's.
 * - A lost connection fails every write of the batch with STORE_UNAVAILABLE, as it would fail
 *   each alone: rolled back before COMMIT was sent, unknown after; nothing is half-written
 *   because it is one transaction. Serialization failures and deadlocks (40001, 40P01) retry
 *   the whole batch, as they retry a single transaction.
 * - Audit events are linked last, after every row write, so the head lock is held only for
 *   the link statement and COMMIT, once per batch instead of once per write.
 * - Two transactions in flight cannot deadlock on the head: its holder has run every other
 *   statement and waits only for its COMMIT. One may wait for row locks the other holds, as
 *   writes of two instances do, and sees the rows as that one committed them. Queued on one
 *   connection, the second runs only after the first's COMMIT is done.
 * - A transaction queued behind another's COMMIT is its own: nothing is sent for the first
 *   after its COMMIT (no ROLLBACK after a failure: the COMMIT already ends it), and the
 *   connection goes back to the pool only when both are done (connection.ts).
 */
export function createGroupCommit(
  connection: Connection,
  linkAudit: LinkAudit,
  // Fewer than the pool's size, one connection always left over: a batch started while the
  // one before holds the only connection cannot run its writes anyway, and its wait for one
  // would count against the pool's connection timeout (a COMMIT that waits that long on the
  // head failed the next batch). A write inside a batch may take a second connection (a data
  // key loaded for the encrypting codec): with every connection held by a batch, two such
  // writes would wait on each other until the timeout.
  poolMax = IN_FLIGHT + 1,
): GroupCommit {
  const limit = Math.max(1, Math.min(IN_FLIGHT, poolMax - 1));
  const waiting: Entry[] = [];
  // Transactions of this process in flight, and whether one of them is still running its
  // writes (the others have sent their link and COMMIT and wait for the WAL flush).
  let inFlight = 0;
  let gathering = false;
  // How many transactions in flight carry a write with audit events.
  let auditInFlight = 0;

  async function alone(entry: Entry, chain?: TransactionChain): Promise<void> {
    try {
      if (entry.shape === 'single') {
        entry.resolve(await entry.write(connection.query, () => undefined));
        return;
      }
      // A batch of one: held to its shape alone too, so a mislabelled write fails every time,
      // not only when it happens to share a transaction.
      const [result] = await inTransaction([entry], () => undefined, chain);
      entry.resolve(result);
    } catch (error) {
      entry.reject(error);
    }
  }

  /**
   * Runs the batch's writes on `query`: a run of `one` writes is started at once (their
   * statements pipelined), a `many` write after everything before it settled. Returns their
   * results in batch order and their audit groups in batch order, or throws the error of the
   * write that caused the failure, named in `blame`.
   */
  async function runBatch(
    query: Query,
    batch: readonly Entry[],
    blame: (entry: Entry) => void,
  ): Promise<{ results: unknown[]; groups: AuditGroup[] }> {
    const results: unknown[] = [];
    const groupsOf: AuditGroup[][] = batch.map(() => []);
    const sinkOf =
      (i: number): AuditSink =>
      (events, at) => {
        if (events !== undefined && events.length > 0) groupsOf[i]!.push({ events, at });
      };
    for (let start = 0; start < batch.length; ) {
      // The next run: pipelined `one`/`single` writes, or one `many` write by itself.
      let end = start + 1;
      if (batch[start]!.shape !== 'many') {
        while (end < batch.length && batch[end]!.shape !== 'many') end++;
      }
      const run = batch.slice(start, end);
      const settled = await Promise.allSettled(
        run.map((entry, i) =>
          entry.shape === 'many'
            ? entry.write(query, sinkOf(start + i))
            : atMostOne(entry, query, sinkOf(start + i)),
        ),
      );
      const failed = settled.findIndex((outcome) => outcome.status === 'rejected');
      if (failed >= 0) {
        // Statements run in the order sent, and each write sends its first statement as it
        // starts, in batch order. A statement behind a failed one fails too: 25P02 ("the
        // transaction is aborted"), or 26000 when its Parse was refused for that reason and
        // its Bind then names a statement that does not exist. So the first write in batch
        // order whose failure is not a 25P02 is the cause (a 26000 comes only after it). If
        // every failure is a 25P02 the cause is unknown: nobody is blamed, each runs alone.
        // A wrong blame would cost a round, not correctness: the blamed write runs alone and
        // the others run again together.
        const cause = settled.findIndex(
          (outcome) => outcome.status === 'rejected' && !isInFailedTransaction(outcome.reason),
        );
        if (cause >= 0) blame(run[cause]!);
        throw (settled[cause >= 0 ? cause : failed] as PromiseRejectedResult).reason;
      }
      for (const outcome of settled) results.push((outcome as PromiseFulfilledResult<unknown>).value);
      start = end;
    }
    return { results, groups: groupsOf.flat() };
  }

  /**
   * Runs a write declared `one` or `single`, holding it to that: one that succeeds after a
   * second statement was mislabelled, and its statements may have interleaved with others'.
   * Its transaction is rolled back (the throw) rather than committed.
   */
  async function atMostOne(entry: Entry, query: Query, sink: AuditSink): Promise<unknown> {
    let sent = 0;
    const result = await entry.write((text, values, options) => {
      sent += 1;
      return query(text, values, options);
    }, sink);
    if (sent > 1) {
      throw new Error(`A write declared to send one statement sent ${sent}; declare it 'many'.`);
    }
    return result;
  }

  /**
   * The batch's writes (runBatch) and then their audit link, whose statement carries the
   * COMMIT, in one transaction; retried as a whole after a serialization failure or deadlock.
   */
  function inTransaction(
    batch: readonly Entry[],
    blame: (entry: Entry | undefined) => void,
    chain?: TransactionChain,
  ): Promise<unknown[]> {
    return connection.transaction(async (query) => {
      // Each attempt starts blaming nobody: a retried batch's earlier failure is not its own.
      blame(undefined);
      const ran = await runBatch(query, batch, blame);
      await linkAudit(query, ran.groups, true);
      return ran.results;
    }, chain);
  }

  async function together(batch: Entry[], chain: TransactionChain): Promise<void> {
    let results: unknown[];
    // The write that threw, if one did: it runs again alone, the rest go back to the queue.
    let failing: Entry | undefined;
    try {
      results = await inTransaction(
        batch,
        (entry) => {
          failing = entry;
        },
        chain,
      );
    } catch (error) {
      // The connection died under the batch (its COMMIT may have gone through, so nothing of it
      // may run again), or the store could not be reached before any write ran: every write
      // of the batch gets the error. A STORE_UNAVAILABLE of one write's own (a key it could
      // not fetch, a statement timeout, a full disk) is that write's, as any other error.
      if (error instanceof StoreUnavailableError && (failing === undefined || isLostConnectionError(error))) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      // PostgreSQL rolled the whole transaction back. The write that threw runs again alone,
      // so the error it reports is its own; the others return to the head of the queue and
      // share the next transaction. Each round takes one write out, so this ends.
      if (failing === undefined) {
        for (const entry of batch) await alone(entry);
        return;
      }
      const culprit = failing;
      waiting.unshift(...batch.filter((entry) => entry !== culprit));
      await alone(culprit);
      return;
    }
    batch.forEach((entry, i) => {
      entry.resolve(results[i]);
    });
  }

  /** Starts the next batch if one may start: on `after`'s connection, if it is on offer. */
  function pump(after?: FollowOn): void {
    if (gathering || inFlight >= limit || waiting.length === 0) return;
    const batch = waiting.splice(0, MAX_BATCH);
    const audited = batch.some((entry) => entry.shape !== 'single') ? 1 : 0;
    inFlight += 1;
    auditInFlight += audited;
    gathering = true;
    let gathered = false;
    // The batch has run its writes and queued its link with the COMMIT: the next may start,
    // queued behind that COMMIT on the same connection. It goes out in the same socket write
    // and runs as soon as the COMMIT is done, one round trip per batch instead of two.
    const linking = (next?: FollowOn) => {
      if (gathered) return;
      gathered = true;
      gathering = false;
      pump(next);
    };
    const chain: TransactionChain = { committing: linking, ...(after ? { after } : {}) };
    void (batch.length === 1 ? alone(batch[0]!, chain) : together(batch, chain)).finally(() => {
      inFlight -= 1;
      auditInFlight -= audited;
      linking();
      pump();
    });
  }

  return {
    run<T>(write: Write<T>, shape: WriteShape): Promise<T> {
      // A one-statement write without audit events shares a transaction only while writes
      // with audit events are in flight or waiting: those queue on the audit head anyway, and
      // riding along saves it a transaction of its own. Otherwise it runs at once in
      // autocommit, on its own connection, in parallel with everything else: queuing writes
      // that never contend behind one another made 16 sessions stepping at once run at
      // 0.36-0.43x the steps/s.
      if (shape === 'single' && auditInFlight === 0 && !waiting.some((entry) => entry.shape !== 'single')) {
        return write(connection.query, () => undefined);
      }
      return new Promise<T>((resolve, reject) => {
        // Bound to the caller's async context: its statements belong to its own request (a
        // trace span, a counter), not to whichever request's transaction carries them.
        waiting.push({
          write: AsyncResource.bind(write) as Write<unknown>,
          shape,
          resolve: resolve as (value: unknown) => void,
          reject,
        });
        pump();
      });
    },
  };
}
