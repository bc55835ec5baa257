import type { CountersignEvent, EventBus, EventListener } from '../event-bus.ts';

/** Events within one process: enough for SQLite, where one process serves everything. */
export function createMemoryEventBus(): EventBus {
  const listeners = new Set<EventListener>();
  return {
    async publish(event: CountersignEvent) {
      // One copy for all listeners, detached from the publisher's object: with many live
      // streams open, a copy per listener was a measurable share of a decision's cost.
      // Listeners only read events.
      const copy = structuredClone(event);
      for (const listener of [...listeners]) {
        try {
          listener(copy);
        } catch {
          // A broken listener must not stop the others, nor the run that published.
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
    },
  };
}
