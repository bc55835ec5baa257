import { performance } from 'node:perf_hooks';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';

/** How long one reading of the server's clock is carried forward before it is taken again. */
const REMEASURE_MS = 60_000;

const NOW_SQL = 'SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::float8 AS ms';

type Query = (text: string) => Promise<Array<Record<string, unknown>>>;

/**
 * The PostgreSQL server's clock, read from this process: the time leases run on when hosts
 * share the store (Liveness#now). A lease's term is written by its holder and judged lapsed by
 * whoever wants the session; on each host's own wall clock, a host a minute ahead took every
 * live holder's lease as lapsed, and one a minute behind kept its leases a minute too long.
 *
 * Read once (one statement; the answer is placed at the middle of the round trip, so the
 * error is at most half of it), then carried forward by this process's monotonic clock, which
 * neither a wrong wall clock nor an NTP step moves; read again, in the background, once the
 * reading is a minute old, so a drift never adds up. The first call waits for the first
 * reading and throws what `query` throws (STORE_UNAVAILABLE): no lease can be taken then anyway.
 */
export function serverClock(query: Query): () => Promise<number> {
  let reading: { serverMs: number; at: number } | null = null;
  let measuring: Promise<{ serverMs: number; at: number }> | null = null;

  function measure(): Promise<{ serverMs: number; at: number }> {
    measuring ??= (async () => {
      const before = performance.now();
      const rows = await query(NOW_SQL);
      const after = performance.now();
      const serverMs = rows[0]?.ms;
      if (typeof serverMs !== 'number' || !Number.isFinite(serverMs))
        throw new StoreUnavailableError('The PostgreSQL server did not say what time it is.');
      reading = { serverMs, at: (before + after) / 2 };
      return reading;
    })().finally(() => {
      measuring = null;
    });
    return measuring;
  }

  return async () => {
    let current = reading;
    if (current === null) current = await measure();
    else if (performance.now() - current.at > REMEASURE_MS) measure().catch(() => undefined);
    return Math.round(current.serverMs + (performance.now() - current.at));
  };
}
