import type { CountersignEvent, EventBus, EventListener } from '../event-bus.ts';

/** Events within one process: enough for SQLite, where one process serves everything. */
export function createMemoryEventBus(): EventBus {
  const listeners = new Set<EventListener>();
  return {
    async publish(event: CountersignEvent) {
      for (const listener of [...listeners]) {
        try {
          listener(structuredClone(event));
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
