import { guardedLog } from '../core/guarded-log.ts';
import type { RetentionPolicy } from '../core/retention.ts';
import { type PurgeReport, purge } from '../erasure/purge.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { Store } from '../store/store.ts';

export interface RetentionSchedule {
  policy: RetentionPolicy;
  /** Between passes (default one hour; 0: never on its own, as tests do). */
  intervalMs?: number;
  /** Bounded batches per pass per store (default 20 of `batchSize`); the rest waits for the next pass. */
  maxBatches?: number;
  batchSize?: number;
}

/**
 * `serve`'s retention: a purge every `intervalMs`, each pass a few bounded batches read from
 * the partial indexes by age, so an hour's pass costs what it removes, never a walk of the
 * rows that wait. Instances sharing a store may all run it: each batch is one transaction
 * (PostgreSQL skips rows another instance has locked), and what is gone is not counted twice.
 */
export function schedulePurge(
  options: RetentionSchedule & {
    store: Store;
    checkpoints?: CheckpointStore;
    now: () => Date;
    log: (line: string) => void;
  },
): { tick(): Promise<PurgeReport>; stop(): Promise<void> } {
  let running: Promise<PurgeReport> | null = null;
  const log = guardedLog(options.log);
  const tick = (): Promise<PurgeReport> => {
    running ??= purge(options.store, {
      policy: options.policy,
      now: options.now(),
      by: 'countersign',
      maxBatches: options.maxBatches ?? 20,
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      ...(options.checkpoints ? { checkpoints: options.checkpoints } : {}),
    }).finally(() => {
      running = null;
    });
    return running;
  };
  const intervalMs = options.intervalMs ?? 3_600_000;
  const timer =
    intervalMs > 0
      ? setInterval(() => {
          tick().catch((error: unknown) => log(`countersign: retention purge failed: ${String(error)}`));
        }, intervalMs)
      : null;
  timer?.unref();
  return {
    tick,
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
