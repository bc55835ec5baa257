import { describe, expect, it } from 'vitest';
import type { CountersignEvent } from '../../src/events/event-bus.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { bookstore, orderStatus } from '../helpers/bookstore-agent.ts';
import { testServer } from './helpers.ts';

describe('the store watcher', () => {
  it("announces requests raised and decided by another process, which never reach this server's bus", async () => {
    const store = createMemoryStore();
    const server = testServer({ store });
    const seen: CountersignEvent[] = [];
    server.events.subscribe((event) => seen.push(event));
    await server.watch();
    // Another process: the same store, its own agent, no connection to this server's bus.
    const { agent: other } = bookstore({ store });
    const turn = await other.chat('console', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    await server.watch();
    expect(seen).toMatchObject([{ type: 'approval.requested', approval: { id, tool: 'cancel_order' } }]);
    await other.approve(id, { by: 'cli-user' });
    await server.watch();
    expect(seen[1]).toMatchObject({
      type: 'approval.decided',
      requestId: id,
      verdict: 'approved',
      by: 'cli-user',
    });
    await server.watch();
    expect(seen).toHaveLength(2);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
  });

  it('answers overdue requests as expired and lets the session continue, so the customer hears it', async () => {
    let now = new Date('2026-01-01T10:00:00Z');
    const { agent } = bookstore({ now: () => now, approvalTtl: '1m' });
    const server = testServer({ agents: [agent], now: () => now });
    const seen: CountersignEvent[] = [];
    server.events.subscribe((event) => seen.push(event));
    const turn = await server.call('POST', '/v1/sessions/s1/messages', {
      as: 'svc',
      body: { text: 'Please cancel my order 1044.', user: 'c-100' },
    });
    const id = turn.json.approvals[0].id;
    now = new Date('2026-01-01T10:02:00Z');
    await server.watch();
    expect(seen.find((event) => event.type === 'approval.decided')).toMatchObject({
      requestId: id,
      verdict: 'expired',
    });
    const finished = seen.filter((event) => event.type === 'turn.finished').at(-1);
    expect(finished).toMatchObject({ session: 's1', status: 'completed' });
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{ kind: string }>;
    expect(audit.map((entry) => entry.kind)).toContain('request.expired');
  });
});
