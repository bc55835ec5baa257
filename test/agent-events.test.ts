import { describe, expect, it } from 'vitest';
import { createAgent } from '../src/agent/create-agent.ts';
import type { CountersignEvent } from '../src/events/event-bus.ts';
import { createMemoryEventBus } from '../src/events/memory/memory-event-bus.ts';
import { bookstore } from './helpers/bookstore-agent.ts';

describe('events', () => {
  it('announces the request, the decision, the execution and the finished turn, in that order', async () => {
    const events = createMemoryEventBus();
    const seen: CountersignEvent[] = [];
    const unsubscribe = events.subscribe((event) => seen.push(event));
    const { agent: base } = bookstore();
    const agent = createAgent({ ...base.options, events });

    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = first.approvals[0]!.id;
    await agent.approve(id, { by: 'alice' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.map((event) => event.type)).toEqual([
      'approval.requested',
      'turn.finished',
      'approval.decided',
      'execution.finished',
      'turn.finished',
    ]);
    expect(seen[0]).toMatchObject({ approval: { id, tool: 'cancel_order', args: { orderId: 1044 } } });
    expect(seen[2]).toMatchObject({ requestId: id, verdict: 'approved', by: 'alice', kind: 'person' });
    expect(seen[3]).toMatchObject({ requestId: id, status: 'succeeded' });
    expect(seen[4]).toMatchObject({ session: 's1', status: 'completed' });

    unsubscribe();
    await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    expect(seen).toHaveLength(5);
  });

  it('a listener that throws does not break the run or the other listeners', async () => {
    const events = createMemoryEventBus();
    const seen: string[] = [];
    events.subscribe(() => {
      throw new Error('broken listener');
    });
    events.subscribe((event) => seen.push(event.type));
    const { agent: base } = bookstore();
    const agent = createAgent({ ...base.options, events });
    const result = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    expect(result.status).toBe('awaiting_approval');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toContain('approval.requested');
  });
});
