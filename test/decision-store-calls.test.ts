import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgentRegistry } from '../src/server/agent-registry.ts';
import { decideRequest } from '../src/server/decide-request.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { bookstore, orderStatus } from './helpers/bookstore-agent.ts';
import { countingStore } from './helpers/counting-store.ts';

/**
 * What one decision costs in store calls: the HTTP path (decide-request → agent.decide →
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
  const counted = countingStore(createSqliteStore({ path: join(dir, 'store.db') }));
  const { agent } = bookstore({ store: counted.store });
  const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
  expect(turn.status).toBe('awaiting_approval');
  counted.reset();
  return { ...counted, agent, requestId: turn.approvals[0]!.id };
}

describe('store calls of one decision', () => {
  it('the HTTP decide path (before: the request three times, the session twice)', async () => {
    const { store, calls, agent, requestId } = await waitingRequest();
    const result = await decideRequest(
      store,
      createAgentRegistry([agent]),
      { name: 'alice', roles: [], via: 'token' },
      requestId,
      { approved: true, extra: {} },
    );
    expect(result.status).toBe('completed');
    const counts = calls();
    console.log('store calls of one HTTP decision:', counts);
    expect(counts).toEqual({
      getApproval: 3,
      getSession: 2,
      decide: 1,
      loadMessages: 1,
      getExecution: 1,
      startExecution: 1,
      commitStep: 2,
      // The bookstore tool's own state: read the order, write it cancelled.
      getState: 2,
      setState: 1,
    });
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    await store.close();
  });
});
