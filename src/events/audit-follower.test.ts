import { describe, expect, it } from 'vitest';
import type { AuditEntry, AuditEvent } from '../core/audit.ts';
import { createMemoryStore } from '../store/memory/memory-store.ts';
import { createAuditFollower } from './audit-follower.ts';
import { createMemoryEventBus } from './memory/memory-event-bus.ts';

const note = (n: number): AuditEvent => ({
  kind: 'call.logged',
  session: 's1',
  requestId: null,
  actor: 'test',
  data: { tool: 'add_to_cart', args: `{"n":${n}}`, resultHash: 'x' },
});

describe('the audit follower', () => {
  it('reads from where it starts, in pages, each entry once and in order', async () => {
    const store = createMemoryStore();
    await store.appendAudit([note(1), note(2)], new Date().toISOString());
    const seen: number[] = [];
    const follower = createAuditFollower({
      log: store,
      from: async () => 1,
      deliver: (entries) => {
        seen.push(...entries.map((entry) => entry.seq));
      },
      pollMs: 0,
      pageSize: 2,
    });
    await store.appendAudit([note(3), note(4), note(5)], new Date().toISOString());
    await follower.catchUp();
    expect(seen).toEqual([2, 3, 4, 5]);
    expect(follower.position).toBe(5);
    await follower.catchUp();
    expect(seen).toEqual([2, 3, 4, 5]);
    await follower.stop();
  });

  it('a delivery that throws leaves the cursor: the same entries come again (at least once)', async () => {
    const store = createMemoryStore();
    const errors: unknown[] = [];
    let failing = true;
    const delivered: number[][] = [];
    const follower = createAuditFollower({
      log: store,
      from: async () => 0,
      deliver: (entries: AuditEntry[]) => {
        delivered.push(entries.map((entry) => entry.seq));
        if (failing) throw new Error('outbox down');
      },
      pollMs: 0,
      onError: (error) => errors.push(error),
    });
    await store.appendAudit([note(1), note(2)], new Date().toISOString());
    await follower.catchUp();
    expect(follower.position).toBe(0);
    expect(errors).toHaveLength(1);
    failing = false;
    await follower.catchUp();
    expect(delivered).toEqual([
      [1, 2],
      [1, 2],
    ]);
    expect(follower.position).toBe(2);
    await follower.stop();
  });

  it('wakes on the bus, and wake-ups close together are one read', async () => {
    const store = createMemoryStore();
    const bus = createMemoryEventBus();
    let reads = 0;
    const counted = {
      listAudit: (query?: Parameters<typeof store.listAudit>[0]) => {
        reads += 1;
        return store.listAudit(query);
      },
    };
    const seen: number[] = [];
    const follower = createAuditFollower({
      log: counted,
      from: async () => 0,
      deliver: (entries) => {
        seen.push(...entries.map((entry) => entry.seq));
      },
      wake: bus,
      pollMs: 0,
    });
    await follower.catchUp();
    reads = 0;
    await store.appendAudit([note(1)], new Date().toISOString());
    for (let i = 0; i < 5; i++)
      await bus.publish({ type: 'turn.finished', at: '', session: 's1', status: 'completed', reply: null });
    await expect.poll(() => seen).toEqual([1]);
    expect(reads).toBe(1);
    await follower.stop();
  });

  it('catchUp includes what committed while a pass was under way', async () => {
    const store = createMemoryStore();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: number[] = [];
    const follower = createAuditFollower({
      log: store,
      from: async () => 0,
      deliver: async (entries) => {
        seen.push(...entries.map((entry) => entry.seq));
        await gate;
      },
      pollMs: 0,
    });
    await store.appendAudit([note(1)], new Date().toISOString());
    const first = follower.catchUp();
    await expect.poll(() => seen).toEqual([1]);
    await store.appendAudit([note(2)], new Date().toISOString());
    const second = follower.catchUp();
    release();
    await Promise.all([first, second]);
    expect(seen).toEqual([1, 2]);
    await follower.stop();
  });

  it('an onError that throws stops neither the pass queued behind the failing one nor later ones', async () => {
    const store = createMemoryStore();
    let failing = true;
    const seen: number[] = [];
    const follower = createAuditFollower({
      log: store,
      from: async () => 0,
      deliver: (entries) => {
        if (failing) throw new Error('outbox down');
        seen.push(...entries.map((entry) => entry.seq));
      },
      pollMs: 0,
      onError: () => {
        throw new Error('the log is closed');
      },
    });
    await store.appendAudit([note(1)], new Date().toISOString());
    // The second is queued behind the first, which fails and whose logging fails too.
    const first = follower.catchUp();
    const queued = follower.catchUp();
    await Promise.allSettled([first, queued]);
    failing = false;
    await follower.catchUp();
    expect(seen).toEqual([1]);
    expect(follower.position).toBe(1);
    await follower.stop();
  });
});
