import { continuableStalledSessions } from '../agent/stalled-sessions.ts';
import { guardedLog } from '../core/guarded-log.ts';
import { failureReason, trackOutage } from '../core/outage.ts';
import type { ContinuationQueue } from '../queue/continuation-queue.ts';
import type { Store } from '../store/store.ts';

export interface WorkerSweepOptions {
  store: Store;
  queue: ContinuationQueue;
  /** The app's agents: another app's sessions are left to that app's workers. */
  agents: readonly string[];
  /** Between sweeps after the first, which runs at start (default 30 s). */
  intervalMs?: number;
  /** Sessions enqueued per sweep at most (default 50). */
  limit?: number;
  log: (line: Record<string, unknown>) => void;
}

/**
 * One sweep: a continuation for each stalled session (decided, nobody continuing it), such
 * as a decision whose `approve --queue` died before enqueueing. A session that only looks
 * stalled because its job is still queued gets a second job; that one finds nothing to do,
 * since the lease serializes the two and the ledger runs each call at most once.
 */
export async function enqueueStalledSessions(
  options: Pick<WorkerSweepOptions, 'store' | 'queue' | 'agents' | 'limit'>,
): Promise<string[]> {
  const stalled = await continuableStalledSessions(options.store, {
    limit: options.limit ?? 50,
    agents: options.agents,
  });
  for (const session of stalled) await options.queue.enqueue({ session: session.id, reason: 'stalled' });
  return stalled.map((session) => session.id);
}

/**
 * Sweeps now and then every `intervalMs` until stopped. A failing sweep is logged as an
 * outage (src/core/outage.ts): one `sweep-failed` line when sweeps start failing, reminders
 * (`still: true`) while they go on, one `sweep-recovered` when one works again.
 */
export function startWorkerSweep(options: WorkerSweepOptions): { stop(): Promise<void> } {
  const intervalMs = options.intervalMs ?? 30_000;
  const log = guardedLog(options.log);
  const outage = trackOutage(({ ms, attempts, reason }) => {
    log({ event: 'sweep-failed', still: true, failedMs: ms, attempts, message: reason, intervalMs });
  });
  let running: Promise<void> | null = null;
  const sweep = () => {
    running ??= enqueueStalledSessions(options)
      .then((sessions) => {
        const ended = outage.end();
        if (ended !== null) log({ event: 'sweep-recovered', failedMs: ended.ms, attempts: ended.attempts });
        if (sessions.length > 0) log({ event: 'stalled', sessions });
      })
      .catch((error: unknown) => {
        const message = failureReason(error);
        if (outage.begin(message)) log({ event: 'sweep-failed', message, intervalMs });
        outage.failed(message);
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  void sweep();
  const timer = setInterval(() => void sweep(), intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      outage.stop();
      await running;
    },
  };
}
