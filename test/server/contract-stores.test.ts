import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests } from '../helpers/postgres.ts';
import { raiseCancel, testServer } from './helpers.ts';

const pg = await postgresForTests();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const stores: Array<[string, () => Promise<Store>]> = [
  [
    'SQLite',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'countersign-contract-'));
      const store = createSqliteStore({ path: join(dir, 'store.db') });
      cleanups.push(async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      });
      return store;
    },
  ],
  ...(pg === null
    ? []
    : ([
        [
          'PostgreSQL',
          async () => {
            const schema = freshSchema('contract');
            const store = await createPostgresStore({ connectionString: pg, schema });
            cleanups.push(async () => {
              await store.close();
              await dropSchema(schema);
            });
            return store;
          },
        ],
      ] as Array<[string, () => Promise<Store>]>)),
];

/*
 * testServer checks every /v1 response against the served document with undocumented fields
 * refused (test/helpers/openapi-contract.ts). Here every operation runs on the stores that
 * serialize rows themselves, so a timestamp, a null or a JSON column read back differently
 * fails the contract, not just a client.
 */
describe.each(stores)('every API response matches /v1/openapi.json on %s', (_name, open) => {
  it('requests, decisions, rules, the ledger, the audit trail and workflow runs', async () => {
    const server = testServer({ store: await open(), workflows: [refundWorkflow] });
    cleanups.push(() => server.close());
    const ok = async (method: string, path: string, as: 'alice' | 'mia' | 'svc', body?: unknown) => {
      const response = await server.call(method, path, { as, ...(body === undefined ? {} : { body }) });
      expect(response.status, `${method} ${path}: ${JSON.stringify(response.json)}`).toBe(200);
      return response.json;
    };

    const id = await raiseCancel(server);
    await ok('GET', '/v1/approvals', 'alice');
    await ok('GET', '/v1/approvals?status=pending&limit=5', 'alice');
    expect(await ok('GET', `/v1/approvals/${id}`, 'alice')).toMatchObject({ decision: null });
    await ok('GET', '/v1/sessions/s1', 'alice');
    await ok('POST', `/v1/approvals/${id}/decision`, 'alice', { approved: true });
    expect(await ok('GET', `/v1/approvals/${id}`, 'alice')).toMatchObject({ decision: { by: 'alice' } });
    const session = await ok('GET', '/v1/sessions/s1', 'alice');
    expect(session.messages.map((m: { message: { role: string } }) => m.message.role)).toContain('tool');

    const kitchen = await ok('POST', '/v1/sessions/k1/messages', 'svc', {
      text: 'Add 12 eggs to the shopping list.',
      user: 'c-100',
      agent: 'kitchen',
    });
    await ok('POST', `/v1/approvals/${kitchen.approvals[0].id}/decision`, 'alice', {
      approved: true,
      remember: 'tool',
    });
    const [rule] = await ok('GET', '/v1/rules', 'alice');
    await ok('POST', `/v1/rules/${rule.id}/revoke`, 'mia');
    await ok('GET', '/v1/rules?includeRevoked=true', 'alice');
    const rejected = await raiseCancel(server, 's2');
    await ok('POST', `/v1/approvals/${rejected}/decision`, 'alice', { approved: false, reason: 'Not now.' });

    expect((await ok('GET', '/v1/executions', 'alice')).length).toBeGreaterThan(0);
    expect((await ok('GET', '/v1/audit', 'alice')).length).toBeGreaterThan(0);
    expect(await ok('GET', '/v1/audit/verify', 'alice')).toMatchObject({ ok: true });
    await ok('POST', '/v1/sessions/s1/resume', 'alice');

    const started = await ok('POST', '/v1/runs', 'svc', { workflow: 'refund', run: 'r-1', input: 1040 });
    await ok('GET', '/v1/runs', 'alice');
    await ok('GET', '/v1/runs/r-1', 'alice');
    await ok('POST', `/v1/runs/r-1/requests/${started.requests[0].id}/response`, 'mia', {
      response: { approved: true, note: 'Checked.' },
    });
    const history = await ok('GET', '/v1/runs/r-1/history', 'alice');
    await ok('POST', '/v1/runs/r-1/resume', 'alice', { from: history[0].checkpointId });

    // Errors are checked too: the Error schema, with a documented code.
    expect((await server.call('GET', '/v1/approvals/apr_nope', { as: 'alice' })).status).toBe(404);
    expect((await server.call('GET', '/v1/approvals')).status).toBe(401);
  });
});
