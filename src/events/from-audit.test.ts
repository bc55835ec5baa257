import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { bookstore } from '../../test/helpers/bookstore-agent.ts';
import { createAgent } from '../agent/create-agent.ts';
import { expireRequest } from '../agent/session-run.ts';
import type { AuditEntry } from '../core/audit.ts';
import { createDemoModel } from '../model/demo-model.ts';
import { createSqliteStore } from '../store/sqlite/sqlite-store.ts';
import type { CountersignEvent } from './event-bus.ts';
import { eventsOf, loggedEventsOf } from './from-audit.ts';
import { createMemoryEventBus } from './memory/memory-event-bus.ts';

/** An event without its time: the bus stamps publication, the log the commit. */
const untimed = ({ at: _at, ...rest }: CountersignEvent) => rest;

function entry(overrides: Partial<AuditEntry> & Pick<AuditEntry, 'kind' | 'data'>): AuditEntry {
  return {
    seq: 7,
    at: '2030-01-01T00:00:00.000Z',
    session: 's1',
    requestId: 'r1',
    actor: 'bookstore',
    prevHash: '0'.repeat(64),
    hash: '1'.repeat(64),
    ...overrides,
  };
}

describe('events derived from audit entries', () => {
  it('an erased entry stands for no event (a replay rebuilds nothing from it)', () => {
    const decided = entry({ kind: 'request.decided', data: { verdict: 'approved' } });
    expect(eventsOf(decided)).toHaveLength(1);
    expect(eventsOf({ ...decided, data: {}, erasedAt: '2030-01-02T00:00:00.000Z' })).toEqual([]);
  });

  it('a run announces on the bus exactly what its audit entries derive, in the same order', async () => {
    const bus = createMemoryEventBus();
    const published: CountersignEvent[] = [];
    bus.subscribe((event) => published.push(event));
    const { agent: base, store } = bookstore();
    // 'reject', so a new message answers the waiting request "moved on" (the bookstore keeps it).
    const agent = createAgent({ ...base.options, events: bus, onNewMessage: 'reject' });
    const kitchen = kitchenAgent.with({ store, events: bus, model: createDemoModel() });

    // Raised, approved with "always for this tool", executed.
    const first = await kitchen.chat('s1', 'Add 12 eggs to the shopping list.', {
      principal: 'c-100',
      by: 'c-100',
    });
    await kitchen.decide(first.approvals[0]!.id, { approved: true, by: 'alice', remember: 'tool' });
    // The same tool again: approved by the standing rule, so nobody is asked and nothing announced.
    await kitchen.chat('s1', 'Add some milk to the shopping list.', { principal: 'c-100' });
    // Raised, then answered "moved on" by a new message.
    await agent.chat('s2', 'Please cancel my order 1044.', { principal: 'c-100' });
    await agent.chat('s2', 'Never mind, what is the weather?', { principal: 'c-100' });
    // Raised, rejected.
    const third = await agent.chat('s3', 'Please cancel my order 1044.', { principal: 'c-100' });
    await agent.reject(third.approvals[0]!.id, { by: 'mia', reason: 'not today' });
    // Raised, expired by a sweep.
    const fourth = await agent.chat('s4', 'Please cancel my order 1044.', { principal: 'c-100' });
    const waiting = (await store.getApproval(fourth.approvals[0]!.id))!;
    await expireRequest(store, waiting, new Date(Date.parse(waiting.expiresAt) + 1).toISOString());
    await new Promise((resolve) => setImmediate(resolve));

    const derived = loggedEventsOf(await store.listAudit()).map((logged) => logged.event);
    const announced = published.filter((event) => event.type !== 'turn.finished');
    // The expiry above went straight to the store, as a sweep in another process does: the log has it, the bus not.
    expect(derived.map(untimed)).toEqual([
      ...announced.map(untimed),
      {
        type: 'approval.decided',
        requestId: waiting.id,
        session: 's4',
        verdict: 'expired',
        by: 'countersign',
        kind: 'expiry',
      },
    ]);
    expect(derived.map((event) => event.type)).toEqual([
      'approval.requested',
      'approval.decided',
      'execution.finished',
      'execution.finished',
      'approval.requested',
      'approval.decided',
      'approval.requested',
      'approval.decided',
      'approval.requested',
      'approval.decided',
    ]);
    expect(derived[0]).toMatchObject({
      approval: { raisedBy: 'c-100', integrity: 'ok', tool: 'add_to_shopping_list' },
    });
  });

  it('every event carries the seq of its entry', async () => {
    const { agent, store } = bookstore();
    const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    await agent.approve(turn.approvals[0]!.id, { by: 'alice' });
    const entries = await store.listAudit();
    for (const logged of loggedEventsOf(entries)) {
      const source = entries.find((candidate) => candidate.seq === logged.seq)!;
      expect(eventsOf(source)).toContainEqual(logged.event);
    }
  });

  it('reads a request.raised written before it carried createdAt, raisedBy and status', () => {
    const [event] = eventsOf(
      entry({
        kind: 'request.raised',
        data: {
          tool: 'cancel_order',
          args: '{"orderId":1044}',
          argsHash: 'x',
          effect: 'Cancels.',
          expiresAt: 'later',
        },
      }),
    );
    expect(event).toMatchObject({
      type: 'approval.requested',
      approval: {
        id: 'r1',
        createdAt: '2030-01-01T00:00:00.000Z',
        raisedBy: null,
        status: 'pending',
        integrity: 'mismatch',
      },
    });
  });

  it('derives the workflow port events', () => {
    const data = { run: 'run-1', workflow: 'refund', port: 'approve_refund', expiresAt: null };
    expect(eventsOf(entry({ kind: 'workflow.requested', session: 'wf.run-1', data }))).toEqual([
      {
        type: 'workflow.requested',
        at: '2030-01-01T00:00:00.000Z',
        requestId: 'r1',
        session: 'wf.run-1',
        run: 'run-1',
        workflow: 'refund',
        port: 'approve_refund',
        expiresAt: null,
      },
    ]);
    expect(
      eventsOf(entry({ kind: 'workflow.answered', session: 'wf.run-1', actor: 'mia', data })),
    ).toMatchObject([{ type: 'workflow.answered', by: 'mia', run: 'run-1' }]);
  });

  it('an entry without the fields an event needs, or of a kind that announces nothing, gives none', () => {
    expect(eventsOf(entry({ kind: 'request.raised', data: { note: 'hand-written' } }))).toEqual([]);
    expect(eventsOf(entry({ kind: 'request.decided', data: {} }))).toEqual([]);
    expect(eventsOf(entry({ kind: 'execution.started', data: { tool: 'x' } }))).toEqual([]);
    expect(eventsOf(entry({ kind: 'request.expired', requestId: null, data: {} }))).toEqual([]);
    expect(eventsOf(entry({ kind: 'request.raised', data: { args: 'not json' } }))).toEqual([]);
  });

  it('the entries of a store written by 0.1.0 still derive their events', async () => {
    const fixtures = join(import.meta.dirname, '../../test/fixtures/stores/v0-1');
    const manifest = JSON.parse(readFileSync(join(fixtures, 'manifest.json'), 'utf8')).sqlite as {
      pendingRequests: Record<string, string>;
      decidedRequests: Record<string, { id: string; status: string; verdictBy: string | null }>;
    };
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-v01-')), 'countersign.db');
    copyFileSync(join(fixtures, 'countersign.db'), path);
    const store = createSqliteStore({ path });
    try {
      const events = loggedEventsOf(await store.listAudit()).map((logged) => logged.event);
      const requested = new Map(
        events.flatMap((event) =>
          event.type === 'approval.requested' ? [[event.approval.id, event.approval]] : [],
        ),
      );
      for (const id of Object.values(manifest.pendingRequests)) {
        const request = await store.getApproval(id);
        if (request?.kind === 'port') continue;
        expect(requested.get(id), id).toMatchObject({
          id,
          status: 'pending',
          raisedBy: null,
          integrity: 'ok',
        });
      }
      const decided = new Map(
        events.flatMap((event) => (event.type === 'approval.decided' ? [[event.requestId, event]] : [])),
      );
      for (const [name, { id, status, verdictBy }] of Object.entries(manifest.decidedRequests)) {
        if (name === 'autoApproved' || name === 'ruleSource') continue;
        expect(decided.get(id), name).toMatchObject({ verdict: status, by: verdictBy });
      }
    } finally {
      await store.close();
    }
  });

  it('nudge entries become request.reminder / escalated / expiring; claims become request.claimed / released', () => {
    const data = {
      kind: 'port',
      tool: 'manager-approval',
      dueAt: '2030-01-01T00:00:00.000Z',
      expiresAt: '2030-01-02T00:00:00.000Z',
      requiredRole: 'manager',
      customer: 'c-300',
    };
    expect(eventsOf(entry({ kind: 'request.reminder', actor: 'countersign', data }))).toEqual([
      {
        type: 'request.reminder',
        at: '2030-01-01T00:00:00.000Z',
        requestId: 'r1',
        session: 's1',
        kind: 'port',
        tool: 'manager-approval',
        dueAt: data.dueAt,
        expiresAt: data.expiresAt,
        requiredRole: 'manager',
        escalatedTo: null,
      },
    ]);
    expect(
      eventsOf(entry({ kind: 'request.escalated', data: { ...data, escalatedTo: 'director' } })),
    ).toMatchObject([{ type: 'request.escalated', escalatedTo: 'director' }]);
    expect(eventsOf(entry({ kind: 'request.expiring', data: { tool: 'x' } }))).toEqual([]);
    expect(
      eventsOf(
        entry({ kind: 'request.claimed', actor: 'alice', data: { until: data.expiresAt, previous: null } }),
      ),
    ).toMatchObject([{ type: 'request.claimed', by: 'alice', until: data.expiresAt }]);
    expect(
      eventsOf(entry({ kind: 'request.released', actor: 'alice', data: { reason: 'released' } })),
    ).toMatchObject([{ type: 'request.released', by: 'alice', until: null }]);
  });
});
