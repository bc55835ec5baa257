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
  log: (line: string) => void;
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
  const names = agents.all.map((agent) => agent.name);
  // When each session was first seen stalled, by this process; pruned to the latest listing.
  const stalledSince = new Map<string, number>();

  // `anyFlagged` false: the store said no session is flagged to be continued (dueWork), which
  // is what an empty listing says too.
  return async (nowMs, anyFlagged = true) => {
    const stalled = anyFlagged ? await continuableStalledSessions(store, { limit, agents: names }) : [];
    const listed = new Set(stalled.map((session) => session.id));
    for (const id of stalledSince.keys()) if (!listed.has(id)) stalledSince.delete(id);
    for (const session of stalled) {
      const since = stalledSince.get(session.id) ?? nowMs;
      if (nowMs - since < graceMs) {
        stalledSince.set(session.id, since);
        continue;
      }
      // Forgotten either way: a failed resume waits a whole grace again before the next try.
      stalledSince.delete(session.id);
      try {
        const turn = await agents.get(session.agent).resume(session.id);
        log(`countersign: continued stalled session ${session.id}: ${turn.status}`);
      } catch (error) {
        // Busy means another run took it since the listing; that run continues it.
        if (!(CountersignError.is(error) && error.code === 'SESSION_BUSY'))
          log(`countersign: could not continue stalled session ${session.id}: ${String(error)}`);
      }
    }
  };
}
