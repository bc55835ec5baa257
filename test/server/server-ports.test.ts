import { afterEach, describe, expect, it } from 'vitest';
import { outboxOf, webSessionStoreOf } from '../../src/server/create-server.ts';
import { deliveryId } from '../../src/server/webhooks/webhook-sender.ts';
import { createMemoryOutbox } from '../../src/store/memory/memory-outbox.ts';
import { createMemoryStore, type MemoryStore } from '../../src/store/memory/memory-store.ts';
import { createMemoryWebSessionStore } from '../../src/store/memory/memory-web-session-store.ts';
import type { Store } from '../../src/store/store.ts';
import { raiseCancel, testServer, tokens } from './helpers.ts';
import { receiver } from './webhook-receiver.ts';

/** The members of the server ports: a store that keeps only the agent ports has none of them. */
const SERVER_PORT_METHODS = new Set([
  'enqueueDelivery',
  'claimDeliveries',
  'finishDelivery',
  'getDelivery',
  'createWebSession',
  'getWebSession',
  'touchWebSession',
  'deleteWebSession',
]);

/** What a third-party agent backend implements: the Store and nothing else. */
function agentPortsOnly(store: MemoryStore): Store {
  return Object.fromEntries(
    Object.entries(store).filter(([name]) => !SERVER_PORT_METHODS.has(name)),
  ) as unknown as Store;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('the server ports (outbox, sign-ins) are not part of the Store', () => {
  it('takes them as given, else from the store when it keeps them, else process-local ones', () => {
    const store = createMemoryStore();
    const outbox = createMemoryOutbox();
    const webSessions = createMemoryWebSessionStore();
    expect(outboxOf({ store, outbox })).toBe(outbox);
    expect(webSessionStoreOf({ store, webSessions })).toBe(webSessions);
    expect(outboxOf({ store })).toBe(store);
    expect(webSessionStoreOf({ store })).toBe(store);
    const bare = agentPortsOnly(store);
    expect('getDelivery' in bare).toBe(false);
    expect(outboxOf({ store: bare })).not.toBe(bare);
    expect(typeof outboxOf({ store: bare }).claimDeliveries).toBe('function');
    expect(typeof webSessionStoreOf({ store: bare }).getWebSession).toBe('function');
  });

  it('a store with only the agent ports still serves sign-ins and webhooks, kept in the process', async () => {
    const hook = await receiver(0);
    closers.push(hook.close);
    const server = testServer({
      store: agentPortsOnly(createMemoryStore()),
      webhook: { url: hook.url, secret: 'whsec-test', retryDelaysMs: [20] },
    });
    closers.push(() => server.close());

    const login = await server.app.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.alice, next: '/' }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const home = await server.app.request('/', { headers: { accept: 'text/html', cookie } });
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('Signed in as <strong>alice</strong>');

    const id = await raiseCancel(server);
    await server.webhooksIdle();
    expect(hook.received).toHaveLength(1);
    expect(await server.outbox.getDelivery(deliveryId('approval.requested', id))).toMatchObject({
      status: 'delivered',
      attempts: 1,
    });
  });
});
