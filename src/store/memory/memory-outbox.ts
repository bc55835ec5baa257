import type { Delivery, Outbox } from '../ports/server/outbox.ts';

const copy = <T>(value: T): T => structuredClone(value);

const byCreated = (a: Delivery, b: Delivery): number =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.createdAt < b.createdAt ? -1 : 1;

/** What erasure removes from a memory outbox (rows by id); returns how many there were. */
export interface MemoryOutboxErasure {
  dropDeliveries(ids: readonly string[]): number;
}

/**
 * A process-local delivery outbox: what a server uses when its store keeps none. Deliveries
 * survive neither a restart nor reach another instance; SQLite and PostgreSQL stores keep theirs.
 */
export function createMemoryOutbox(): Outbox & MemoryOutboxErasure {
  const deliveries = new Map<string, Delivery>();
  return {
    dropDeliveries(ids) {
      let dropped = 0;
      for (const id of ids) if (deliveries.delete(id)) dropped += 1;
      return dropped;
    },

    async enqueueDelivery(delivery) {
      if (deliveries.has(delivery.id)) return false;
      deliveries.set(delivery.id, {
        id: delivery.id,
        kind: delivery.kind,
        payload: copy(delivery.payload),
        createdAt: delivery.createdAt,
        status: 'pending',
        attempts: 0,
        nextAtMs: delivery.nextAtMs,
        claimedBy: null,
        lastError: null,
        finishedAt: null,
      });
      return true;
    },

    async claimDeliveries(claim) {
      const due = [...deliveries.values()]
        .filter((row) => row.status === 'pending' && row.nextAtMs <= claim.nowMs)
        .sort(byCreated)
        .slice(0, Math.max(0, claim.limit));
      return due.map((row) => {
        const claimed: Delivery = {
          ...row,
          attempts: row.attempts + 1,
          nextAtMs: claim.nowMs + claim.leaseMs,
          claimedBy: claim.owner,
        };
        deliveries.set(row.id, claimed);
        return copy(claimed);
      });
    },

    async finishDelivery(id, owner, outcome) {
      const row = deliveries.get(id);
      if (row === undefined || row.status !== 'pending' || row.claimedBy !== owner) return false;
      deliveries.set(
        id,
        outcome.status === 'retry'
          ? { ...row, nextAtMs: outcome.nextAtMs, claimedBy: null, lastError: outcome.error }
          : {
              ...row,
              status: outcome.status,
              claimedBy: null,
              lastError: outcome.status === 'failed' ? outcome.error : row.lastError,
              finishedAt: outcome.at,
            },
      );
      return true;
    },

    async getDelivery(id) {
      const row = deliveries.get(id);
      return row === undefined ? null : copy(row);
    },
  };
}
