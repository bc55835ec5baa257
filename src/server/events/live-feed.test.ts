import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../core/audit.ts';
import type { CountersignEvent } from '../../events/event-bus.ts';
import type { LoggedEvent } from '../../events/from-audit.ts';
import { createMemoryEventBus } from '../../events/memory/memory-event-bus.ts';
import { createMemoryStore } from '../../store/memory/memory-store.ts';
import { createLiveFeed, REPLAY_LIMIT } from './live-feed.ts';

const expired = (id: string): AuditEvent => ({
  kind: 'request.expired',
  session: 's1',
  requestId: id,
  actor: 'countersign',
  data: { expiresAt: '2030-01-01T00:00:00.000Z' },
});
const turnFinished: CountersignEvent = {
  type: 'turn.finished',
  at: '2030-01-01T00:00:00.000Z',
  session: 's1',
  status: 'completed',
  reply: null,
};

describe('the live feed', () => {
  it('starts at the head, and passes turn.finished on only after the entries committed before it', async () => {
    const store = createMemoryStore();
    const bus = createMemoryEventBus();
    await store.appendAudit([expired('old')], '2030-01-01T00:00:00.000Z');
    const feed = createLiveFeed({ log: store, bus, pollMs: 0 });
    await feed.start();
    expect(feed.position).toBe(1);
    const seen: LoggedEvent[] = [];
    feed.subscribe((logged) => seen.push(logged));
    await store.appendAudit([expired('r1'), expired('r2')], '2030-01-01T00:00:01.000Z');
    // Published before the follower has read the two entries, as a run's last step does.
    await bus.publish(turnFinished);
    await expect
      .poll(() => seen.map(({ event }) => event.type))
      .toEqual(['approval.decided', 'approval.decided', 'turn.finished']);
    expect(seen.map(({ seq }) => seq)).toEqual([2, 3, 3]);
    await feed.close();
  });

  it('a store that was down when the first stream came is tried again by the next', async () => {
    const store = createMemoryStore();
    let down = true;
    const log = {
      listAudit: store.listAudit.bind(store),
      lastAuditSeq: () => (down ? Promise.reject(new Error('store down')) : store.lastAuditSeq()),
    };
    const feed = createLiveFeed({ log, bus: createMemoryEventBus(), pollMs: 0 });
    await expect(feed.start()).rejects.toThrow('store down');
    down = false;
    await feed.start();
    expect(feed.position).toBe(0);
    await feed.close();
  });

  it(`replays up to ${REPLAY_LIMIT} entries, and says reload beyond them or past the head`, async () => {
    const store = createMemoryStore();
    const feed = createLiveFeed({ log: store, bus: createMemoryEventBus(), pollMs: 0 });
    await store.appendAudit([expired('a'), expired('b')], '2030-01-01T00:00:00.000Z');
    expect(await feed.replay(0)).toMatchObject({ kind: 'events', upTo: 2, events: [{ seq: 1 }, { seq: 2 }] });
    expect(await feed.replay(2)).toEqual({ kind: 'events', events: [], upTo: 2 });
    expect(await feed.replay(7)).toEqual({ kind: 'reload', head: 2 });
    await store.appendAudit(
      Array.from({ length: REPLAY_LIMIT }, (_, i) => expired(`n${i}`)),
      '2030-01-01T00:00:01.000Z',
    );
    expect(await feed.replay(2)).toMatchObject({ kind: 'events', upTo: REPLAY_LIMIT + 2 });
    expect(await feed.replay(1)).toEqual({ kind: 'reload', head: REPLAY_LIMIT + 2 });
    await feed.close();
  });
});
