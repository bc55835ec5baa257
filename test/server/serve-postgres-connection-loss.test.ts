import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  backendsRunning,
  dropSchema,
  freshSchema,
  postgresForTests,
  storeUrl,
  terminateBackends,
  withApplicationName,
} from '../helpers/postgres.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';

const pg = await postgresForTests();

const tokens = 'svc:service:svc-token-123456,ann:support+manager:ann-token-123456';
const service = { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' };
const approver = { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' };

interface Reply {
  status: number;
  code: string | null;
}

/** One request; a failure to get any answer (the server died) is status 0 with its message. */
async function send(url: string, init: RequestInit = {}): Promise<Reply> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
    text = await response.text();
  } catch (error) {
    return { status: 0, code: String((error as Error).cause ?? error) };
  }
  let code: string | null = null;
  if (response.status >= 400) code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
  return { status: response.status, code };
}

async function raiseOn(base: string, session: string): Promise<string> {
  const posted = await fetch(`${base}/v1/sessions/${session}/messages`, {
    method: 'POST',
    headers: service,
    body: JSON.stringify({ text: 'Please cancel my order 1044.', user: 'c-100' }),
  });
  expect(posted.status).toBe(200);
  const turn = (await posted.json()) as { approvals: Array<{ id: string }> };
  return turn.approvals[0]!.id;
}

/** Reads an SSE stream into `seen` until stopped; `until` resolves once `seen` matches. */
function readStream(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  const waiters = new Set<() => void>();
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      seen += decoder.decode(value);
      for (const wake of waiters) wake();
    }
  })();
  return {
    text: () => seen,
    until(match: (text: string) => boolean, ms = 15_000): Promise<string> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!match(seen)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(seen);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`stream did not match within ${ms} ms:\n${seen}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

/**
 * `countersign serve` on PostgreSQL whose connections are terminated under HTTP load: the
 * process lives, in-flight requests get 503 STORE_UNAVAILABLE (or succeed), later requests
 * succeed, and its event stream keeps delivering events from another instance once its
 * LISTEN connection is back — on the same SSE connection, nothing reconnected by the client.
 */
describe.skipIf(pg === null)('serve on PostgreSQL when its connections are terminated', () => {
  const schema = freshSchema('serve_loss');
  const servers: ServeProcess[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await dropSchema(schema);
  });

  it('stays up, answers 503 STORE_UNAVAILABLE or succeeds, recovers, and keeps streaming events', async () => {
    const appA = `cs_test_serve_a_${randomBytes(4).toString('hex')}`;
    const appB = `cs_test_serve_b_${randomBytes(4).toString('hex')}`;
    const a = await startServe({
      COUNTERSIGN_STORE: withApplicationName(storeUrl(schema), appA),
      COUNTERSIGN_TOKENS: tokens,
    });
    servers.push(a);
    const b = await startServe({
      COUNTERSIGN_STORE: withApplicationName(storeUrl(schema), appB),
      COUNTERSIGN_TOKENS: tokens,
    });
    servers.push(b);

    const pending: string[] = [];
    for (let i = 0; i < 12; i++) pending.push(await raiseOn(a.base, `loss-${i}`));

    const response = await fetch(`${a.base}/v1/events`, { headers: approver });
    expect(response.status).toBe(200);
    const stream = readStream(response.body!);
    await stream.until((text) => text.includes('event: ready'));
    const listen = `LISTEN "countersign_events_${schema}"`;
    const [listenerBefore] = await backendsRunning(appA, listen);
    expect(listenerBefore).toBeTypeOf('number');

    // HTTP load: reads of the inbox list and of sessions, and decisions, from 6 clients.
    const replies: Reply[] = [];
    let stop = false;
    let n = 0;
    const client = async () => {
      while (!stop && a.child.exitCode === null) {
        const i = n++;
        const id = i % 4 === 0 ? pending.shift() : undefined;
        if (id !== undefined) {
          replies.push(
            await send(`${a.base}/v1/approvals/${id}/decision`, {
              method: 'POST',
              headers: approver,
              body: JSON.stringify({ approved: true }),
            }),
          );
        } else if (i % 2 === 0) {
          replies.push(await send(`${a.base}/v1/approvals?status=pending`, { headers: approver }));
        } else {
          replies.push(await send(`${a.base}/v1/sessions/loss-${i % 12}`, { headers: service }));
        }
      }
    };
    const clients = Array.from({ length: 6 }, client);
    let terminated = 0;
    let lastTermination = 0;
    for (let round = 0; round < 4; round++) {
      const before = replies.filter((reply) => reply.status === 200).length;
      while (replies.filter((reply) => reply.status === 200).length < before + 10) {
        if (a.child.exitCode !== null || replies.some((reply) => reply.status === 0)) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      terminated += await terminateBackends(appA);
      lastTermination = performance.now();
    }
    stop = true;
    await Promise.all(clients);

    expect(a.child.exitCode).toBeNull();
    expect(terminated).toBeGreaterThanOrEqual(4);
    const unexpected = replies.filter(
      (reply) => reply.status !== 200 && !(reply.status === 503 && reply.code === 'STORE_UNAVAILABLE'),
    );
    expect(unexpected).toEqual([]);

    // Recovery: the first request that succeeds after the last termination, then all of them.
    let recoveryMs = -1;
    for (let i = 0; i < 200 && recoveryMs < 0; i++) {
      const reply = await send(`${a.base}/v1/approvals?status=pending`, { headers: approver });
      if (reply.status === 200) recoveryMs = performance.now() - lastTermination;
    }
    expect(recoveryMs).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 10; i++) {
      expect(await send(`${a.base}/v1/sessions/loss-${i}`, { headers: service })).toEqual({
        status: 200,
        code: null,
      });
    }
    const unavailable = replies.filter((reply) => reply.status === 503).length;
    console.log(
      `serve connection loss: ${replies.length - unavailable} ok, ${unavailable} 503 STORE_UNAVAILABLE of ` +
        `${replies.length} requests, ${terminated} backends terminated in 4 rounds, first 200 ` +
        `${recoveryMs.toFixed(1)} ms after the last`,
    );

    // The LISTEN connection was terminated with the rest and comes back by itself.
    for (;;) {
      const now = await backendsRunning(appA, listen);
      if (now.length === 1 && now[0] !== listenerBefore) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // execution.finished is published only by the process that ran the call: B.
    const onB = await raiseOn(b.base, 'loss-b');
    const decided = await send(`${b.base}/v1/approvals/${onB}/decision`, {
      method: 'POST',
      headers: approver,
      body: JSON.stringify({ approved: true }),
    });
    expect(decided.status).toBe(200);
    const text = await stream.until((seen) =>
      seen.split('\n\n').some((frame) => frame.includes('event: execution.finished') && frame.includes(onB)),
    );
    expect(text).toContain(onB);
    await stream.cancel();
    expect(a.child.exitCode).toBeNull();
    expect(a.stderr()).not.toMatch(/Unhandled 'error' event|Connection terminated unexpectedly/);
  }, 120_000);
});
