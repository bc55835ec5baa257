import DataLoader from 'dataloader';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';

/** Keys read at once: one statement's array parameter, and how long its result may grow. */
const MAX_KEYS = 64;

/**
 * Point reads by key that callers start in the same turn of the event loop, answered by one
 * statement for all their keys. Each autocommit read is a round trip, a socket write each way
 * and a statement for PostgreSQL to run; under load, concurrent requests read the same table by
 * primary key in the same turn (16 HTTP decisions in flight: 1 to 15 per turn, 2.3 on
 * average). On the HTTP decision bench this took PostgreSQL transactions per decision from 2.06
 * to 1.53 and socket writes from 2.9 to 2.4 (docs/benchmarks.md).
 *
 * Safe because the reads were concurrent: a caller's read is sent after everything it awaited
 * before, its own writes included, so it sees them; which of the concurrent commits of others
 * it sees is any order the callers could have seen. Nothing is cached: every load is read.
 * A store that cannot be reached fails each caller of the turn with that error, as each alone
 * would have; any other failure of a turn's statement is read again key by key, so an error
 * reaches only the caller whose row caused it.
 *
 * `lookup` returns the rows found by key; a key without a row resolves to undefined. Rows come
 * back with their text as the database holds it (a lone surrogate as U+FFFD), so `keyOf` must
 * give each part of a key in that form (storedText, part by part: two halves of a pair would
 * join into a whole one), for the caller's key and the row's alike.
 * Callers wait at most for the current turn: `setImmediate` runs before the loop waits for
 * I/O again, as coalesced-writes.ts does for a connection's writes.
 */
export function coalescedReads<K, V>(
  lookup: (keys: readonly K[]) => Promise<ReadonlyMap<string, V>>,
  keyOf: (key: K) => string,
): (key: K) => Promise<V | undefined> {
  const loader = new DataLoader<K, V | undefined, string>(
    async (keys) => {
      try {
        const found = await lookup(keys);
        return keys.map((key) => found.get(keyOf(key)));
      } catch (error) {
        if (keys.length === 1 || error instanceof StoreUnavailableError) throw error;
        // One row's error (an edited row naming a data key the store does not hold) must not
        // fail the other callers of its turn: each key is read again alone, and each caller
        // gets its own outcome, as the group commit runs a failed batch's writes alone.
        return Promise.all(
          keys.map((key) =>
            lookup([key]).then(
              (found) => found.get(keyOf(key)),
              (own: unknown) => (own instanceof Error ? own : new Error(String(own))),
            ),
          ),
        );
      }
    },
    {
      // A fresh read every time: a cached row would be a stale decision's input.
      cache: false,
      maxBatchSize: MAX_KEYS,
      batchScheduleFn: (run) => setImmediate(run),
    },
  );
  return (key) => loader.load(key);
}
