import type { CountersignEvent, EventBus } from './event-bus.ts';

/** Fire and forget: a failed notification is logged, never allowed to fail a committed step. */
export function emit(bus: EventBus | undefined, event: CountersignEvent): void {
  if (!bus) return;
  bus.publish(event).catch((error: unknown) => {
    if (process.env.COUNTERSIGN_DEBUG)
      process.stderr.write(`countersign: event not published: ${String(error)}\n`);
  });
}
