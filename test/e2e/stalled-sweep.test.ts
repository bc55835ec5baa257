import { afterEach, describe, expect, it } from 'vitest';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createServer } from '../../src/server/create-server.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { runCli, tempStore } from '../helpers/cli.ts';

type Turn = { approvals: Array<{ id: string }> };

/**
 * The crash of crash-recovery.test.ts — `approve` SIGKILLed by the test-only fault hook —
 * but nobody runs `resume` afterwards: the server's store watcher, in this process on the
 * same SQLite file, must find the session and continue it. The kitchen's
 * add_to_shopping_list is not idempotent, so the shopping list counts its real runs.
 */
describe('a server continues what a killed `approve` left behind, without any resume', () => {
  const opened: Array<{ store: Store; close: () => Promise<void> }> = [];

  afterEach(async () => {
    for (const { store, close } of opened.splice(0)) {
      await close();
      await store.close();
    }
  });

  async function killedApprove(point: 'after-decision' | 'after-started') {
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_APP: 'kitchen', COUNTERSIGN_MODEL: 'demo' };
    const chat = await runCli(
      ['chat', '--as', 'backend', 'k', "We're out of eggs, put a dozen on the list.", '--json'],
      env,
    );
    expect(chat.code, chat.stderr).toBe(0);
    const id = (chat.json as Turn).approvals[0]!.id;
    const approve = await runCli(['approve', id, '--json'], { ...env, COUNTERSIGN_TEST_FAULT: point });
    expect(approve.signal).toBe('SIGKILL');

    const store = await openStore(env.COUNTERSIGN_STORE);
    let now = new Date();
    const logs: string[] = [];
    const server = createServer({
      agents: [kitchenAgent.with({ model: createDemoModel() })],
      store,
      watchIntervalMs: 0,
      now: () => now,
      log: (line) => logs.push(line),
    });
    opened.push({ store, close: () => server.close() });
    return {
      id,
      store,
      logs,
      /** One watcher pass, `afterMs` later on the watcher's clock (the sweep's grace is 10 s). */
      async pass(afterMs = 10_000) {
        now = new Date(now.getTime() + afterMs);
        await server.watch();
      },
      async eggsOnList(): Promise<number> {
        const list = ((await store.getState('kitchen', 'shopping-list')) as string[] | undefined) ?? [];
        return list.filter((item) => item.includes('eggs')).length;
      },
    };
  }

  it('after the decision commits: the next passes run the call once and the customer gets the reply', async () => {
    const killed = await killedApprove('after-decision');
    // The decision took the lease for the dead process; its term has not run out. The sweep
    // must see that its holder is gone rather than wait the term.
    const lease = await killed.store.getLease('k');
    expect(lease?.owner).toMatch(/^[^:]+:\d+:/);
    expect(lease?.untilMs).toBeGreaterThan(Date.now());
    expect(await killed.store.listExecutions()).toEqual([]);

    await killed.pass(0);
    expect(await killed.eggsOnList()).toBe(0);
    await killed.pass();
    expect(await killed.eggsOnList()).toBe(1);
    expect(await killed.store.listExecutions()).toMatchObject([
      { requestId: killed.id, status: 'succeeded' },
    ]);
    const last = (await killed.store.loadMessages('k')).at(-1)?.message;
    expect(last).toMatchObject({ role: 'assistant' });
    expect(last?.role === 'assistant' ? last.text : '').toMatch(/eggs/i);
    expect(await killed.store.getLease('k')).toEqual({ owner: null, untilMs: 0 });
    expect(killed.logs).toEqual(['countersign: continued stalled session k: completed']);

    const messages = (await killed.store.loadMessages('k')).length;
    await killed.pass();
    await killed.pass();
    expect(await killed.eggsOnList()).toBe(1);
    expect(await killed.store.loadMessages('k')).toHaveLength(messages);
    expect(killed.logs).toHaveLength(1);
  });

  it('after "started": the pass surfaces the outcome as unknown for a person and never runs the call', async () => {
    const killed = await killedApprove('after-started');
    expect(await killed.store.listExecutions()).toMatchObject([{ requestId: killed.id, status: 'started' }]);
    await killed.pass(0);
    await killed.pass();
    expect(await killed.store.listExecutions()).toMatchObject([{ requestId: killed.id, status: 'unknown' }]);
    expect(killed.logs).toEqual(['countersign: continued stalled session k: awaiting_reconciliation']);
    // Unknown waits for `countersign reconcile`: later passes leave it alone.
    await killed.pass();
    await killed.pass();
    expect(killed.logs).toHaveLength(1);
    expect(await killed.eggsOnList()).toBe(0);
  });
});
