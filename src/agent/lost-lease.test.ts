import { describe, expect, it } from 'vitest';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { onSignal } from '../core/signals.ts';
import { createDemoModel } from '../model/demo-model.ts';
import { createMemoryStore } from '../store/memory/memory-store.ts';
import type { ExecutionStart, Store } from '../store/store.ts';

/**
 * The memory store, but just before this run's first `at` (its ledger start, or its look at
 * the ledger) another process takes the session over and starts the call itself, as a
 * process that judged this one dead (its liveness lock gone during a failover, say) does.
 */
function takenOverAt(
  inner: Store,
  at: 'startExecution' | 'getExecution',
  call: () => ExecutionStart | undefined,
): Store {
  let done = false;
  return new Proxy(inner, {
    get(target, property, receiver) {
      const own = Reflect.get(target, property, receiver);
      const start = call();
      // Armed once the test says what the other process starts.
      if (property !== at || done || start === undefined) return own;
      return async (...args: unknown[]) => {
        done = true;
        const holder = (await target.getLease(start.session))?.owner ?? undefined;
        const now = Date.now();
        const other = 'other-host/1.0123456789abcdef:7:n0nce:pgab';
        const lease = { session: start.session, owner: other, untilMs: now + 20_000, nowMs: now };
        expect(await target.acquireLease({ ...lease, ...(holder ? { takeOverFrom: holder } : {}) })).toBe(
          true,
        );
        await target.startExecution(start);
        return (own as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** What the new holder starts: the request's call, as its own run would. */
async function theCall(store: Store, id: string): Promise<ExecutionStart> {
  const request = (await store.getApproval(id))!;
  return {
    requestId: id,
    session: request.session,
    callId: request.callId,
    tool: request.tool,
    args: request.args,
    idempotencyKey: `countersign:${id}`,
    at: new Date().toISOString(),
  };
}

/** The outcome-unknown signals raised while `work` runs; it must fail with SESSION_BUSY. */
async function unknownsWhileBusy(work: () => Promise<unknown>): Promise<unknown[]> {
  const unknowns: unknown[] = [];
  const stop = onSignal((event) => {
    if (event.kind === 'outcome-unknown') unknowns.push(event);
  });
  try {
    await expect(work()).rejects.toBeInstanceOf(SessionBusyError);
  } finally {
    stop();
  }
  return unknowns;
}

const EGGS = "We're out of eggs, put a dozen on the list.";

describe('a run that lost its lease to another process', () => {
  it('does not call unknown the call the new holder is running: SESSION_BUSY (at its ledger start)', async () => {
    const inner = createMemoryStore();
    let start: ExecutionStart | undefined;
    const store = takenOverAt(inner, 'startExecution', () => start);
    const agent = kitchenAgent.with({ store, model: createDemoModel() });
    const id = (await agent.chat('k-lost', EGGS)).approvals[0]!.id;
    start = await theCall(inner, id);
    expect(await unknownsWhileBusy(() => agent.decide(id, { approved: true, by: 'ann' }))).toEqual([]);
    // Still the new holder's to finish: running, not unknown.
    expect(await inner.getExecution(id)).toMatchObject({ status: 'started' });
  });

  it('nor when it finds the call started as it looks at the ledger (resume)', async () => {
    const inner = createMemoryStore();
    let start: ExecutionStart | undefined;
    const store = takenOverAt(inner, 'getExecution', () => start);
    const continuations = {
      enqueue: async () => undefined,
      work: async () => undefined,
      close: async () => undefined,
    };
    const agent = kitchenAgent.with({ store, model: createDemoModel(), continuations });
    const id = (await agent.chat('k-lost', EGGS)).approvals[0]!.id;
    expect((await agent.decide(id, { approved: true, by: 'ann' })).status).toBe('continuing');
    start = await theCall(inner, id);
    expect(await unknownsWhileBusy(() => agent.resume('k-lost'))).toEqual([]);
    expect(await inner.getExecution(id)).toMatchObject({ status: 'started' });
  });
});
