import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import type { Agent } from '../../src/agent/create-agent.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { AnyLanguageModel } from '../../src/model/language-model.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';

/** The bookstore agent on a fresh memory store and the demo model, for in-process tests. */
export function bookstore(
  overrides: {
    store?: Store;
    model?: AnyLanguageModel;
    now?: () => Date;
    approvalTtl?: string;
    onNewMessage?: 'reject' | 'keep';
  } = {},
): {
  agent: Agent;
  store: Store;
} {
  const store = overrides.store ?? createMemoryStore();
  const agent = createAgent({
    ...bookstoreAgent.options,
    store,
    model: overrides.model ?? createDemoModel(),
    ...(overrides.now ? { now: overrides.now } : {}),
    ...(overrides.approvalTtl ? { approvalTtl: overrides.approvalTtl } : {}),
    ...(overrides.onNewMessage ? { onNewMessage: overrides.onNewMessage } : {}),
  });
  return { agent, store };
}

export async function orderStatus(store: Store, id: number): Promise<string | undefined> {
  const stored = (await store.getState('bookstore', `order:${id}`)) as { status?: string } | undefined;
  return stored?.status;
}
