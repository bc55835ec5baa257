import type { AuditEvent } from '../core/audit.ts';
import { type RetentionPolicy, retentionCutoffs } from '../core/retention.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { PurgeCounts, RetentionCutoffs } from '../store/ports/erasure.ts';
import type { Store } from '../store/store.ts';

export interface PurgeOptions {
  policy: RetentionPolicy;
  /** Count what would go; change nothing. */
  dryRun?: boolean;
  /** Who purges (audited as the actor; `countersign` for serve's schedule). */
  by?: string;
  now?: Date;
  /** Rows of each kind per transaction (default 500). */
  batchSize?: number;
  /** Stop after this many batches per store (default: until nothing is left); serve bounds it. */
  maxBatches?: number;
  /** Where workflow runs live, when not in `store`. */
  checkpoints?: CheckpointStore;
}

export interface PurgeReport {
  dryRun: boolean;
  at: string;
  cutoffs: RetentionCutoffs;
  /** Removed (audit entries: data erased) or, with dryRun, what would be. */
  counts: PurgeCounts;
  /** True when maxBatches stopped it with more left to remove. */
  more: boolean;
}

const ZERO: PurgeCounts = { sessions: 0, runs: 0, requests: 0, auditEntries: 0 };

const sum = (a: PurgeCounts, b: PurgeCounts): PurgeCounts => ({
  sessions: a.sessions + b.sessions,
  runs: a.runs + b.runs,
  requests: a.requests + b.requests,
  auditEntries: a.auditEntries + b.auditEntries,
});

/**
 * Retention: removes what is past its period (finished sessions, ended runs, decided
 * requests; erases old audit entries' data in place), never what waits, in bounded batches
 * (one transaction each). Each batch that removed something is audited as a `retention.purged`
 * entry in its own transaction.
 * `store` is null for a store of runs only (COUNTERSIGN_STORE=file:), which keeps no trail.
 */
export async function purge(store: Store | null, options: PurgeOptions): Promise<PurgeReport> {
  const now = options.now ?? new Date();
  const at = now.toISOString();
  const cutoffs = retentionCutoffs(options.policy, now);
  const limit = options.batchSize ?? 500;
  const dryRun = options.dryRun ?? false;
  const books: (Store | CheckpointStore)[] = [];
  if (store !== null) books.push(store);
  if (options.checkpoints !== undefined && options.checkpoints !== (store as unknown))
    books.push(options.checkpoints);

  let counts = ZERO;
  let more = false;
  for (const book of books) {
    // Each batch audits what it removed in its own transaction (a store without a trail ignores it).
    const audit = (removed: PurgeCounts): AuditEvent[] => [
      {
        kind: 'retention.purged',
        session: null,
        requestId: null,
        actor: options.by ?? 'countersign',
        data: { ...removed },
      },
    ];
    const batch = { before: cutoffs, limit, at, nowMs: now.getTime(), dryRun, audit };
    if (dryRun) {
      counts = sum(counts, await book.purgeBatch(batch));
      continue;
    }
    for (let round = 0; ; round++) {
      if (options.maxBatches !== undefined && round >= options.maxBatches) {
        more = true;
        break;
      }
      const removed = await book.purgeBatch(batch);
      counts = sum(counts, removed);
      // A batch that was not full of some kind had no more of it.
      const full = Object.values(removed).some((n) => n >= limit);
      if (!full) break;
    }
  }
  return { dryRun, at, cutoffs, counts, more };
}
