import { z } from 'zod';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { type Agent, createAgent } from '../../src/agent/create-agent.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import {
  type CountersignServer,
  createServer,
  outboxOf,
  type ServerOptions,
} from '../../src/server/create-server.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Outbox } from '../../src/store/ports/server/outbox.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { type ContractCheck, contractChecker, parseBody } from '../helpers/openapi-contract.ts';
import { scriptModel } from '../helpers/script-model.ts';

export const tokens = {
  alice: 'alice-token-0123456789',
  mia: 'mia-token-0123456789abc',
  svc: 'svc-token-0123456789abc',
  customer: 'c100-token-0123456789ab',
  admin: 'dana-token-0123456789abc',
};

export const approvers = [
  { name: 'alice', roles: ['support'], token: tokens.alice },
  { name: 'mia', roles: ['support', 'manager'], token: tokens.mia },
  { name: 'backend', roles: ['service'], token: tokens.svc },
  // An approver who is also customer c-100: may never decide c-100's own requests.
  { name: 'c-100', roles: ['support', 'manager'], token: tokens.customer },
  // The only one who may erase a customer's data.
  { name: 'dana', roles: ['admin'], token: tokens.admin },
];

/** Refunds need a manager, and every one is seen by a person. */
export const refundTool = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ orderId: z.number().int(), amount: z.string() }),
  role: 'manager',
  standing: false,
  execute: ({ orderId, amount }) => ({ ok: true, message: `Refunded ${amount} for order ${orderId}.` }),
});

export function refundDesk(): Agent {
  return createAgent({
    name: 'refund-desk',
    instructions: 'Refunds.',
    tools: [refundTool],
    model: scriptModel([[{ tool: 'refund', args: { orderId: 1044, amount: '35.00' } }], ['Refund issued.']]),
  });
}

export interface TestServer extends CountersignServer {
  store: Store;
  /** Where the server's webhook deliveries wait (the store's own for SQLite and PostgreSQL). */
  outbox: Outbox;
  /**
   * JSON request with a bearer token (by approver name) or none. Every /v1 response is checked
   * against the server's own /v1/openapi.json (test/helpers/openapi-contract.ts).
   */
  call(
    method: string,
    path: string,
    options?: { as?: keyof typeof tokens; body?: unknown; raw?: string; headers?: Record<string, string> },
    // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies loosely; assertions check them.
  ): Promise<{ status: number; json: any; headers: Headers }>;
}

export function testServer(overrides: Partial<ServerOptions> & { agents?: Agent[] } = {}): TestServer {
  const store = overrides.store ?? createMemoryStore();
  const outbox = outboxOf({ store, outbox: overrides.outbox });
  const server = createServer({
    agents: [
      bookstoreAgent.with({ model: createDemoModel() }),
      kitchenAgent.with({ model: createDemoModel() }),
      refundDesk(),
    ],
    approvers,
    watchIntervalMs: 0,
    log: () => undefined,
    ...overrides,
    store,
    outbox,
  });
  let contract: ContractCheck | undefined;
  const checkContract = async (response: Parameters<ContractCheck>[0]) => {
    contract ??= contractChecker(
      (await (await server.app.request('/v1/openapi.json')).json()) as Record<string, unknown>,
    );
    contract(response);
  };
  return {
    ...server,
    store,
    outbox,
    async call(method, path, options = {}) {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.as) headers.authorization = `Bearer ${tokens[options.as]}`;
      let body: string | undefined;
      if (options.raw !== undefined) body = options.raw;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await server.app.request(path, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
      });
      const json = parseBody(await response.text());
      if (path.startsWith('/v1/'))
        await checkContract({
          method,
          path,
          status: response.status,
          contentType: response.headers.get('content-type'),
          body: json,
        });
      return { status: response.status, json, headers: response.headers };
    },
  };
}

/** The customer asks the bookstore to cancel 1044; returns the request id. */
export async function raiseCancel(server: TestServer, session = 's1'): Promise<string> {
  const turn = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text: 'Please cancel my order 1044.', user: 'c-100', agent: 'bookstore' },
  });
  if (turn.status !== 200) throw new Error(JSON.stringify(turn.json));
  return turn.json.approvals[0].id as string;
}
