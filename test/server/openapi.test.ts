import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { contractChecker } from '../helpers/openapi-contract.ts';
import { raiseCancel, testServer } from './helpers.ts';

type Json = Record<string, unknown>;

const served = async (workflows: boolean): Promise<Json> => {
  const server = testServer(
    workflows ? { workflows: [refundWorkflow], checkpoints: createMemoryCheckpointStore() } : {},
  );
  const response = await server.call('GET', '/v1/openapi.json');
  expect(response.status).toBe(200);
  return response.json as Json;
};

const operationsOf = (doc: Json) =>
  Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

describe.each([false, true])('/v1/openapi.json (workflows: %s)', (workflows) => {
  it('is valid for swagger-parser', async () => {
    const doc = await served(workflows);
    // validate() dereferences in place.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it('has no problems, not even warnings, under redocly lint (recommended rules)', async () => {
    const doc = await served(workflows);
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: JSON.stringify(doc),
      absoluteRef: 'openapi.json',
      config,
    });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
  });

  it('names every operation uniquely and keeps schema refs inside components', async () => {
    const doc = await served(workflows);
    const ids = operationsOf(doc).map(({ operation }) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map(([, ref]) => ref!);
    for (const ref of refs) expect(ref).toMatch(/^#\/components\/(schemas|responses)\/[A-Za-z]+$/);
    expect(JSON.stringify(doc)).not.toContain('$defs');
  });
});

describe('response contract', () => {
  it('documents every field an approval carries, required, with a pending decision as null', async () => {
    const doc = await served(false);
    const approval = (doc.components as { schemas: Record<string, Json> }).schemas.Approval!;
    const properties = Object.keys(approval.properties as Json);
    expect(approval.required).toEqual(properties);
    expect(properties).toEqual(
      expect.arrayContaining(['agent', 'callId', 'customer', 'requiredRole', 'standingAllowed', 'integrity']),
    );
    const server = testServer();
    const id = await raiseCancel(server);
    // testServer checks each /v1 response; this one has decision null and integrity ok.
    const shown = await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' });
    expect(shown.json).toMatchObject({ status: 'pending', decision: null, integrity: 'ok' });
  });

  it('fails a response with an undocumented field, a missing field or an undocumented route', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const check = contractChecker(await served(false));
    const shown = (await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json as Json;
    const received =
      (body: unknown, path = `/v1/approvals/${id}`, status = 200) =>
      () =>
        check({ method: 'GET', path, status, contentType: 'application/json', body });
    expect(received(shown)).not.toThrow();
    expect(received({ ...shown, secret: 1 })).toThrow(/must NOT have additional properties/);
    const { integrity: _, ...withoutIntegrity } = shown;
    expect(received(withoutIntegrity)).toThrow(/must have required property 'integrity'/);
    expect(received({ ...shown, decision: { verdict: 'approved' } })).toThrow(/decision/);
    expect(received([], '/v1/nowhere')).toThrow(/not in the OpenAPI document/);
    expect(
      received({ error: { code: 'NOT_FOUND', message: 'No route.' } }, '/v1/nowhere', 404),
    ).not.toThrow();
    expect(received({ error: { code: 'NOPE', message: 'x' } }, `/v1/approvals/${id}`, 404)).toThrow(/code/);
  });
});

describe('a generated client', () => {
  it('openapi-typescript turns the served document into types a call type-checks against', async () => {
    const doc = await served(true);
    const types = astToString(await openapiTS(doc as never));
    const dir = await mkdtemp(join(tmpdir(), 'countersign-client-'));
    try {
      await writeFile(join(dir, 'api.d.ts'), types);
      await writeFile(
        join(dir, 'client.ts'),
        `import type { paths } from './api.d.ts';
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: { 200: { content: { 'application/json': infer T } } };
} ? T : never;
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody: { content: { 'application/json': infer T } };
} ? T : never;

async function post<P extends keyof paths>(path: P, body: Body<P, 'post' & keyof paths[P]>) {
  const response = await fetch(path, { method: 'POST', body: JSON.stringify(body) });
  return (await response.json()) as Ok<P, 'post' & keyof paths[P]>;
}

export async function approveFirst(): Promise<string | null> {
  const list = (await (await fetch('/v1/approvals')).json()) as Ok<'/v1/approvals', 'get'>;
  const first = list[0];
  if (!first) return null;
  const role: string | null = first.requiredRole;
  const integrity: 'ok' | 'mismatch' = first.integrity;
  const verdict: 'approved' | 'rejected' | 'answered' | 'expired' | undefined = first.decision?.verdict;
  // @ts-expect-error the decision may be null
  first.decision.verdict;
  // @ts-expect-error no such field
  first.nonexistent;
  const turn = await post('/v1/approvals/{id}/decision', { approved: true, remember: 'tool' });
  // @ts-expect-error approved is a boolean
  await post('/v1/approvals/{id}/decision', { approved: 'yes' });
  const run = await post('/v1/runs', { workflow: 'refund', run: 'r-1', input: 1040 });
  return [role, integrity, verdict, turn.status, turn.approvals[0]?.agent, run.requests[0]?.expiresAt].join();
}
`,
      );
      const tsc = resolve('node_modules/typescript/bin/tsc');
      const args = [
        '--noEmit',
        '--strict',
        '--target',
        'es2023',
        '--lib',
        'es2023,dom',
        '--module',
        'nodenext',
      ];
      const run = promisify(execFile)(process.execPath, [tsc, ...args, join(dir, 'client.ts')]);
      await expect(run.then(() => 'ok').catch((error: { stdout: string }) => error.stdout)).resolves.toBe(
        'ok',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
