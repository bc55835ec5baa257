import { ownerIsDeadHere } from '../agent/lease.ts';
import type { ContinuationQueue } from '../queue/continuation-queue.ts';
import type { Store } from '../store/store.ts';

export interface TakeoverWatchOptions {
  store: Pick<Store, 'getLease'>;
  queue: ContinuationQueue;
  /** Between looks (default 1 s). */
  intervalMs?: number;
  /** Jobs in hand looked at per pass (default 100). */
  limit?: number;
  log: (line: Record<string, unknown>) => void;
}

/**
 * One look: a new continuation for each job in hand whose session's lease belongs to a process
 * on this host that no longer exists. pg-boss would give such a job to another worker only
 * after its heartbeat lapses (10 s, its minimum) and its supervisor notices; the new job is
 * taken at the next poll, and `resume` takes the dead holder's lease at once (the same rule,
 * acquireSessionLease). `seen` remembers what was handed over, so a dead holder's session is
 * enqueued once, not once per pass until the old job times out; that old job, retried later,
 * finds nothing to do. The cost is flat: one indexed read of the jobs in hand (at most
 * workers × concurrency) and one lease read each, whatever the backlog.
 */
export async function takeOverDeadHolders(
  options: Pick<TakeoverWatchOptions, 'store' | 'queue' | 'limit'>,
  seen: Map<string, string>,
): Promise<string[]> {
  if (options.queue.inHand === undefined) return [];
  const taken: string[] = [];
  const sessions = await options.queue.inHand(options.limit ?? 100);
  for (const session of new Set(sessions)) {
    const lease = await options.store.getLease(session);
    const owner = lease?.owner ?? null;
    if (owner === null || seen.get(session) === owner || !ownerIsDeadHere(owner)) continue;
    await options.queue.enqueue({ session, reason: 'taken-over' });
    seen.set(session, owner);
    taken.push(session);
  }
  // Forget sessions no longer in hand: the map stays as small as the jobs in hand.
  const inHand = new Set(sessions);
  for (const session of seen.keys()) if (!inHand.has(session)) seen.delete(session);
  return taken;
}

/** Looks now and then every `intervalMs` until stopped; a failed look is logged and retried. */
export function startTakeoverWatch(options: TakeoverWatchOptions): { stop(): Promise<void> } {
  const seen = new Map<string, string>();
  let running: Promise<void> | null = null;
  const look = () => {
    running ??= takeOverDeadHolders(options, seen)
      .then((sessions) => {
        if (sessions.length > 0) options.log({ event: 'taken-over', sessions });
      })
      .catch((error: unknown) => {
        options.log({
          event: 'takeover-failed',
          message: error instanceof Error ? error.message : String(error),
        });
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  void look();
  const timer = setInterval(() => void look(), options.intervalMs ?? 1000);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
