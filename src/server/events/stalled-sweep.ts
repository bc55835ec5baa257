import { continuableStalledSessions } from '../../agent/stalled-sessions.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import type { Store } from '../../store/store.ts';
import type { AgentRegistry } from '../agent-registry.ts';

export interface StalledSweepOptions {
  store: Store;
  agents: AgentRegistry;
  /** Sessions continued per pass at most (default 50): a backlog drains over several passes. */
  limit?: number;
  /**
   * How long a session must have been seen stalled before this server continues it (default
   * 10 s). A session decided with `approve --queue` looks stalled until a worker takes it,
   * and one decided while another run held its lease looks stalled until its decider takes
   * the lease; the grace leaves both to their owner, so the server is the backstop for a
   * continuation that never comes, not a competitor for every one.
   */
  graceMs?: number;
  /**
   * The longest wait before trying again a session whose continuation failed (default 10
   * min). After each failure in a row the wait doubles from the grace: a session that cannot
   * be continued (a tool that always throws, a row that no longer reads) is retried and
   * logged ever less often, not every grace forever.
   */
  maxBackoffMs?: number;
  log: (line: string) => void;
}

/** The default longest wait between tries of a session whose continuation keeps failing. */
export const STALLED_MAX_BACKOFF_MS = 600_000;

/** The wait after the `failures`-th failure in a row: the grace, doubled each time, capped. */
export function stalledRetryDelay(failures: number, graceMs: number, maxMs: number): number {
  return Math.min(maxMs, graceMs * 2 ** Math.min(failures, 30));
}

/**
 * Continues sessions left decided but never continued: the deciding process died after its
 * decision committed (inline), or before it enqueued the continuation (queue mode). Each is
 * an ordinary `resume`, so the lease serializes it with any other run and the ledger keeps
 * every approved call at most once.
 */
export function createStalledSweep(
  options: StalledSweepOptions,
): (nowMs: number, anyFlagged?: boolean) => Promise<void> {
  const { store, agents, log } = options;
  const limit = options.limit ?? 50;
  const graceMs = options.graceMs ?? 10_000;
  const maxBackoffMs = options.maxBackoffMs ?? STALLED_MAX_BACKOFF_MS;
  const names = agents.all.map((agent) => agent.name);
  // When each session was first seen stalled, by this process; pruned to the latest listing.
  const stalledSince = new Map<string, number>();
  // Sessions whose continuation failed here: how often in a row, and not before when again.
  const failed = new Map<string, { failures: number; retryAt: number }>();

  // `anyFlagged` false: the store said no session is flagged to be continued (dueWork), which
  // is what an empty listing says too.
  return async (nowMs, anyFlagged = true) => {
    const stalled = anyFlagged ? await continuableStalledSessions(store, { limit, agents: names }) : [];
    const listed = new Set(stalled.map((session) => session.id));
    for (const id of stalledSince.keys()) if (!listed.has(id)) stalledSince.delete(id);
    for (const id of failed.keys()) if (!listed.has(id)) failed.delete(id);
    for (const session of stalled) {
      const backoff = failed.get(session.id);
      if (backoff !== undefined) {
        // Its grace was over before it failed: only the backoff stands in the way.
        if (nowMs < backoff.retryAt) continue;
      } else {
        const since = stalledSince.get(session.id) ?? nowMs;
        if (nowMs - since < graceMs) {
          stalledSince.set(session.id, since);
          continue;
        }
      }
      stalledSince.delete(session.id);
      try {
        const turn = await agents.get(session.agent).resume(session.id);
        failed.delete(session.id);
        log(`countersign: continued stalled session ${session.id}: ${turn.status}`);
      } catch (error) {
        // Busy means another run took it since the listing; that run continues it.
        if (CountersignError.is(error) && error.code === 'SESSION_BUSY') continue;
        const failures = (backoff?.failures ?? 0) + 1;
        const waitMs = stalledRetryDelay(failures, graceMs, maxBackoffMs);
        failed.set(session.id, { failures, retryAt: nowMs + waitMs });
        log(
          `countersign: could not continue stalled session ${session.id} (${failures} ${failures === 1 ? 'try' : 'tries in a row'}; next in ${Math.round(waitMs / 1000)} s): ${String(error)}`,
        );
      }
    }
  };
}
