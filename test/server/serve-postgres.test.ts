import { afterAll, describe, expect, it } from 'vitest';
import { contractFetch } from '../helpers/openapi-contract.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';

const pg = await postgresForTests();

const tokens = 'svc:service:svc-token-123456,ann:support+manager:ann-token-123456';

const serve = (store: string) => startServe({ COUNTERSIGN_STORE: store, COUNTERSIGN_TOKENS: tokens });

/**
 * Two server instances on one PostgreSQL schema: what happens on one reaches the browsers of
 * the other through LISTEN/NOTIFY. `execution.finished` is only ever published by the
 * process that ran the call, so seeing it on the other instance proves the channel.
 */
describe.skipIf(pg === null)('serve: several instances on PostgreSQL share their events', () => {
  const schema = freshSchema('serve');
  const children: ServeProcess[] = [];
  afterAll(async () => {
    for (const child of children) await child.stop();
    await dropSchema(schema);
  });

  it('a decision on instance A streams to a client of instance B', async () => {
    const a = await serve(storeUrl(schema));
    children.push(a);
    const b = await serve(storeUrl(schema));
    children.push(b);

    const stream = await fetch(`${b.base}/v1/events`, {
      headers: { authorization: 'Bearer ann-token-123456' },
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let seen = '';
    const sawFinished = (async () => {
      const decoder = new TextDecoder();
      while (!seen.includes('event: execution.finished')) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += decoder.decode(value);
      }
      return seen;
    })();

    // Over real HTTP from a real `serve`: each response checked against the served document.
    const checked = contractFetch(a.base);
    const posted = await checked('/v1/sessions/pg-serve-1/messages', {
      method: 'POST',
      headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Please cancel my order 1044.', user: 'c-100' }),
    });
    expect(posted.status).toBe(200);
    const turn = (await posted.json()) as { approvals: Array<{ id: string }> };
    const decided = await checked(`/v1/approvals/${turn.approvals[0]!.id}/decision`, {
      method: 'POST',
      headers: { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    });
    expect(decided.status).toBe(200);
    const headers = { authorization: 'Bearer ann-token-123456' };
    for (const path of [
      '/v1/approvals',
      '/v1/executions',
      '/v1/audit',
      '/v1/sessions/pg-serve-1',
      '/v1/runs',
    ])
      expect((await checked(path, { headers })).status, path).toBe(200);

    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve(seen), 10_000));
    const text = await Promise.race([sawFinished, timeout]);
    await reader.cancel();
    expect(text).toContain('event: execution.finished');
    expect(text).toContain(turn.approvals[0]!.id);
  });
});
