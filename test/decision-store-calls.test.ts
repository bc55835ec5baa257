import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRequestDesk } from '../src/requests/request-desk.ts';
import { decideToolCall } from '../src/server/decide-request.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { bookstore, orderStatus } from './helpers/bookstore-agent.ts';
import { countingStore } from './helpers/counting-store.ts';

/**
 * What one decision costs in store calls: the HTTP path (the request desk → agent.decide →
 * the session's continuation, inline) on SQLite with the demo model. Pinned per method so
 * a change that reads a row twice again fails here.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function waitingRequest() {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-calls-'));
  dirs.push(dir);
  const inner = createSqliteStore({ path: join(dir, 'store.db') });
  const counted = countingStore(inner);
  const { agent } = bookstore({ store: counted.store });
  const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
  expect(turn.status).toBe('awaiting_approval');
  counted.reset();
  return { ...counted, inner, agent, requestId: turn.approvals[0]!.id };
}

/**
 * Before rows were passed down (commit 60fa909), the same decision made 14 calls: getApproval 3
 * (decide-request, agent.decide, the run's expiry pass), getSession 2 (separation of duties,
 * the run) and the 9 below that remain. Since the decision that takes the lease also reads
 * what the run reads first (DecideOptions.loadRun), loadMessages and getExecution are part of
 * `decide` (one statement on PostgreSQL). The ledger row is still looked at: one found for a
 * request just decided (test/agent-rules.test.ts) must still stop the batch.
 */
const oneDecision = {
  // The request and its session in one read (getApproval and getSession until then).
  getApprovalWithSession: 1,
  decide: 1,
  startExecution: 1,
  commitStep: 2,
  // The bookstore tool's own state: its approval policy reads the order (routing by amount is
  // judged again at the decision, so an edited row cannot lower it), the tool reads it and
  // writes it cancelled. A tool whose policy reads no state costs one call less.
  getState: 3,
  setState: 1,
};

describe('store calls of one decision', () => {
  it('the HTTP decide path reads the request once and the session once', async () => {
    const { store, calls, agent, requestId } = await waitingRequest();
    // As the server builds it: the one decide path for both kinds, over the same store.
    const requests = createRequestDesk({ store, agentFor: () => agent });
    const result = await decideToolCall({ requests }, { name: 'alice', roles: [], via: 'token' }, requestId, {
      approved: true,
      extra: {},
    });
    expect(result.status).toBe('completed');
    console.log('store calls of one HTTP decision:', calls());
    expect(calls()).toEqual(oneDecision);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    await store.close();
  });

  it('agent.decide called directly reads them once too', async () => {
    const { store, calls, agent, requestId } = await waitingRequest();
    expect((await agent.approve(requestId, { by: 'alice' })).status).toBe('completed');
    expect(calls()).toEqual(oneDecision);
    await store.close();
  });

  it('a decision that finds the session busy reads it again once the lease is free', async () => {
    const { store, inner, calls, agent, requestId } = await waitingRequest();
    // Another process holds the session: the decision wins without its lease, and the
    // holder lets go once the decision is stored (watched on the store itself, uncounted).
    const now = Date.now();
    expect(
      await inner.acquireLease({ session: 's1', owner: 'other', untilMs: now + 60_000, nowMs: now }),
    ).toBe(true);
    const released = (async () => {
      while ((await inner.getApproval(requestId))?.status === 'pending') await new Promise(setImmediate);
      await inner.releaseLease('s1', 'other');
    })();
    const result = await agent.approve(requestId, { by: 'alice' });
    await released;
    expect(result.status).toBe('completed');
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    const counts = calls();
    // The decision's read, then the run's own (it did not hold the lease the decision saw).
    expect(counts.getApprovalWithSession).toBe(1);
    expect(counts.getSession).toBe(1);
    expect(counts.getApproval).toBe(1);
    // Without the lease the decision read nothing for the run: the run reads them itself.
    expect(counts.loadMessages).toBe(1);
    expect(counts.getExecution).toBe(1);
    await store.close();
  });

  it('a quorum: the first of two approvals is 4 store calls and writes no session; the last costs what one decision does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-calls-'));
    dirs.push(dir);
    const inner = createSqliteStore({ path: join(dir, 'store.db') });
    const counted = countingStore(inner);
    const { agent } = bookstore({ store: counted.store });
    // Order 1062 (129.40) needs two managers.
    const turn = await agent.chat('s1', 'Please cancel my order 1062.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    counted.reset();
    const first = await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    expect(first.status).toBe('awaiting_approval');
    console.log('store calls of a partial approval:', counted.calls());
    // The row with its session (separation of duties), the policy's order read, the compare-and-set.
    expect(counted.calls()).toEqual({ getApprovalWithSession: 1, getState: 1, recordApproval: 1 });
    counted.reset();
    const last = await agent.decide(id, { approved: true, by: 'max', roles: ['manager'] });
    expect(last.status).toBe('completed');
    console.log('store calls of the approval that completes it:', counted.calls());
    expect(counted.calls()).toEqual(oneDecision);
    await inner.close();
  });
});
