import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CountersignEvent } from '../../src/events/event-bus.ts';
import { createMemoryEventBus } from '../../src/events/memory/memory-event-bus.ts';
import type { AgentRegistry } from '../../src/server/agent-registry.ts';
import { WATCH_IDLE_MS, watchStore } from '../../src/server/events/store-watcher.ts';
import type { DueWork } from '../../src/store/ports/request-timers.ts';
import type { Store } from '../../src/store/store.ts';

const INTERVAL = 2000;
const start = Date.parse('2026-12-01T12:00:00.000Z');
const inSeconds = (seconds: number) => new Date(start + seconds * 1000).toISOString();
const idle: DueWork = { expiry: false, nudges: false, stalled: false, next: null };
/** Any event will do: the watcher looks within an interval of each. */
const anEvent = (second: number): CountersignEvent => ({
  type: 'turn.finished',
  at: inSeconds(second),
  session: 's1',
  status: 'completed',
  reply: null,
});

/**
 * When the watcher asks the store: a store whose dueWork answers what the test says and
 * records when it was asked, on fake timers (the clock moves only when the test moves it).
 */
function watched(
  answer: (at: string) => DueWork,
  options: { dueWork?: boolean; log?: (line: string) => void } = {},
) {
  const asked: number[] = [];
  const store = {
    ...(options.dueWork === false
      ? {}
      : {
          dueWork: async (at: string) => {
            asked.push((Date.parse(at) - start) / 1000);
            return answer(at);
          },
        }),
    listDue: async () => {
      asked.push((Date.now() - start) / 1000);
      return [];
    },
    listNudgesDue: async () => [],
    listStalledSessions: async () => [],
  } as unknown as Store;
  const events = createMemoryEventBus();
  const watcher = watchStore({
    store,
    events,
    agents: { all: [] } as unknown as AgentRegistry,
    now: () => new Date(),
    intervalMs: INTERVAL,
    log: options.log ?? (() => undefined),
  });
  return { asked, events, watcher };
}

describe('when the store watcher looks', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: start });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('with nothing waiting, asks once and then every WATCH_IDLE_MS, not every interval', async () => {
    const { asked, watcher } = watched(() => idle);
    await vi.advanceTimersByTimeAsync(3 * WATCH_IDLE_MS);
    expect(asked).toEqual([0, 10, 20, 30]);
    await watcher.stop();
  });

  it('sleeps until the soonest stored expiry or nudge, and then every interval while it is due', async () => {
    let due = inSeconds(3.5);
    const { asked, watcher } = watched((at) =>
      at >= due ? { ...idle, expiry: true, next: due } : { ...idle, next: due },
    );
    await vi.advanceTimersByTimeAsync(8000);
    // At 0 nothing is due yet: the next look is at 3.5 s, not at 2 s; then it is due, so
    // the sweep runs every interval until it is not (the fake store never clears it).
    expect(asked.filter((second) => second <= 8)).toEqual([0, 3.5, 3.5, 5.5, 5.5, 7.5, 7.5]);
    due = inSeconds(3600);
    await vi.advanceTimersByTimeAsync(30_000);
    // Then the soonest is an hour away: it looks every WATCH_IDLE_MS at most.
    expect(asked.filter((second) => second > 8)).toEqual([9.5, 19.5, 29.5]);
    await watcher.stop();
  });

  it('looks within an interval of any event on the bus, since a new request may come due sooner', async () => {
    const { asked, events, watcher } = watched(() => ({ ...idle, next: inSeconds(3600) }));
    await vi.advanceTimersByTimeAsync(1000);
    expect(asked).toEqual([0]);
    await events.publish(anEvent(1));
    // A burst of events moves the look once, to an interval after the first.
    await vi.advanceTimersByTimeAsync(500);
    await events.publish(anEvent(1.5));
    await vi.advanceTimersByTimeAsync(5000);
    expect(asked).toEqual([0, 3]);
    await watcher.stop();
  });

  it('an event that comes while a pass runs is not lost: the next look is an interval later, not an idle one', async () => {
    let publish = async (): Promise<void> => undefined;
    const { asked, events, watcher } = watched(() => {
      // The pass has read the store; the event arrives before it finishes.
      void publish();
      return idle;
    });
    publish = async () => {
      publish = async () => undefined;
      await events.publish(anEvent(0));
    };
    await vi.advanceTimersByTimeAsync(WATCH_IDLE_MS - 1);
    expect(asked).toEqual([0, 2]);
    await watcher.stop();
  });

  it('while a session is flagged to be continued, looks every interval (the grace is counted by passes)', async () => {
    const { asked, watcher } = watched(() => ({ ...idle, stalled: true }));
    await vi.advanceTimersByTimeAsync(6000);
    expect(asked).toEqual([0, 2, 4, 6]);
    await watcher.stop();
  });

  it('a store that cannot say what is due is swept every interval, as before', async () => {
    const { asked, watcher } = watched(() => idle, { dueWork: false });
    await vi.advanceTimersByTimeAsync(6000);
    expect(asked).toEqual([0, 2, 4, 6]);
    await watcher.stop();
  });

  it('a soonest time that does not read (an edited row) is looked at every interval, not in a busy loop', async () => {
    const { asked, watcher } = watched(() => ({ ...idle, next: 'garbage' }));
    await vi.advanceTimersByTimeAsync(6000);
    expect(asked).toEqual([0, 2, 4, 6]);
    await watcher.stop();
  });

  it('a soonest time that reads as past but sorts as not yet due (another format) is looked at every interval, not in a busy loop', async () => {
    // An edited row: 13:00 at +02:00 is 11:00Z, an hour ago, but as text it sorts after the
    // pass's '2026-12-01T12:…Z', so the store does not call it due.
    const { asked, watcher } = watched(() => ({ ...idle, next: '2026-12-01T13:00:00+02:00' }));
    await vi.advanceTimersByTimeAsync(6000);
    expect(asked).toEqual([0, 2, 4, 6]);
    await watcher.stop();
  });

  it('a failing pass whose logger throws too is looked at again every interval, not never again', async () => {
    let failing = true;
    const { asked, watcher } = watched(
      () => {
        if (failing) throw new Error('the store is down');
        return idle;
      },
      {
        log: () => {
          throw new Error('the log is closed');
        },
      },
    );
    await vi.advanceTimersByTimeAsync(6000);
    expect(asked).toEqual([0, 2, 4, 6]);
    failing = false;
    await vi.advanceTimersByTimeAsync(2000 + WATCH_IDLE_MS);
    expect(asked).toEqual([0, 2, 4, 6, 8, 18]);
    await watcher.stop();
  });

  it('after stop, nothing runs and no event wakes it', async () => {
    const { asked, events, watcher } = watched(() => idle);
    await vi.advanceTimersByTimeAsync(0);
    await watcher.stop();
    await events.publish(anEvent(0));
    await vi.advanceTimersByTimeAsync(3 * WATCH_IDLE_MS);
    expect(asked).toEqual([0]);
  });
});
