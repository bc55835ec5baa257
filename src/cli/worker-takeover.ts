import { livenessOf } from '../agent/lease.ts';
import { guardedLog } from '../core/guarded-log.ts';
import { failureReason, trackOutage } from '../core/outage.ts';
import { deadOwners } from '../liveness/dead-owners.ts';
import type { ContinuationQueue } from '../queue/continuation-queue.ts';
import type { Store } from '../store/store.ts';

export interface TakeoverWatchOptions {
  store: Pick<Store, 'getLease' | 'liveness'>;
  queue: ContinuationQueue;
  /** Between looks (default 1 s). */
  intervalMs?: number;
  /** Jobs in hand looked at per pass (default 100). */
  limit?: number;
  log: (line: Record<string, unknown>) => void;
}

/**
 * One look: a new continuation for each job in hand whose session's lease belongs to a dead
 * process: on this host, one that no longer exists; on another, one whose liveness token no
 * live process holds (src/liveness/dead-owners.ts, the rule `resume` applies too). pg-boss
 * would give such a job to another worker only after its heartbeat lapses (10 s, its
 * minimum) and its supervisor notices; the new job is taken at the next poll, and `resume`
 * takes the dead holder's lease at once (acquireSessionLease). `seen` remembers what was
 * handed over, so a dead holder's session is enqueued once, not once per pass until the old
 * job times out; that old job, retried later, finds nothing to do. The cost is flat: one
 * indexed read of the jobs in hand (at most workers × concurrency), one lease read each, and
 * one liveness question for all the holders on other hosts (on PostgreSQL one read of
 * pg_locks), whatever the backlog.
 */
export async function takeOverDeadHolders(
  options: Pick<TakeoverWatchOptions, 'store' | 'queue' | 'limit'>,
  seen: Map<string, string>,
): Promise<Array<{ session: string; holder: string }>> {
  if (options.queue.inHand === undefined) return [];
  const sessions = await options.queue.inHand(options.limit ?? 100);
  const held: Array<{ session: string; holder: string }> = [];
  for (const session of new Set(sessions)) {
    const holder = (await options.store.getLease(session))?.owner ?? null;
    if (holder !== null && seen.get(session) !== holder) held.push({ session, holder });
  }
  const dead = await deadOwners(
    held.map(({ holder }) => holder),
    livenessOf(options.store),
  );
  const taken = held.filter(({ holder }) => dead.has(holder));
  for (const { session, holder } of taken) {
    await options.queue.enqueue({ session, reason: 'taken-over' });
    seen.set(session, holder);
  }
  // Forget sessions no longer in hand: the map stays as small as the jobs in hand.
  const inHand = new Set(sessions);
  for (const session of seen.keys()) if (!inHand.has(session)) seen.delete(session);
  return taken;
}

/**
 * Looks now and then every `intervalMs` until stopped. A failed look is retried at the next
 * tick, and logged as an outage (src/core/outage.ts): one `takeover-failed` line when looks
 * start failing, reminders while they keep failing (`still: true`, 30 s after the first, then
 * 1, 2, 4, 8 min, at most 5 min apart), and `takeover-recovered` when one works again. Not
 * one line per failed look: while PostgreSQL is down that was one a second.
 */
export function startTakeoverWatch(options: TakeoverWatchOptions): { stop(): Promise<void> } {
  const seen = new Map<string, string>();
  const log = guardedLog(options.log);
  const outage = trackOutage(({ ms, attempts, reason }) => {
    log({ event: 'takeover-failed', still: true, failedMs: ms, attempts, message: reason });
  });
  let running: Promise<void> | null = null;
  const look = () => {
    running ??= takeOverDeadHolders(options, seen)
      .then((taken) => {
        const ended = outage.end();
        if (ended !== null)
          log({ event: 'takeover-recovered', failedMs: ended.ms, attempts: ended.attempts });
        if (taken.length > 0)
          log({
            event: 'taken-over',
            sessions: taken.map(({ session }) => session),
            holders: taken.map(({ holder }) => holder),
          });
      })
      .catch((error: unknown) => {
        const message = failureReason(error);
        if (outage.begin(message)) log({ event: 'takeover-failed', message });
        outage.failed(message);
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
      outage.stop();
    },
  };
}
