// Store calls per idle second of a server with 1,000 waiting requests: the store watcher
// and, where they run, the audit-log followers of the live streams and the webhooks.
//   node bench/watcher-idle.ts [SECONDS]
// Prints one line of JSON per configuration: calls per second by method, rows read per second.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bookstoreAgent } from '../examples/bookstore/app.ts';
import { waitingFields } from '../src/core/request-defaults.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { createServer } from '../src/server/create-server.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';

const seconds = Number(process.argv[2] ?? 10);
// `WAITING=10000 node bench/watcher-idle.ts 5` for a larger backlog.
const WAITING = Number(process.env.WAITING ?? 1000);
// `NUDGES=future`: every request has a reminder an hour away (all in the nudge index, none due);
// `NUDGES=due100`: and the first 100 come due 4 s after seeding, inside the counted window
// (which opens 2.5 s after the server starts): each fires once.
const NUDGES = process.env.NUDGES ?? 'none';

function nudgesOf(i: number, at: string) {
  if (NUDGES === 'none') return null;
  const inMs = NUDGES === 'due100' && i < 100 ? 4_000 : 3_600_000;
  const remindAt = new Date(Date.parse(at) + inMs).toISOString();
  return {
    remindAt,
    remindedAt: null,
    escalateAt: null,
    escalateTo: null,
    escalatedAt: null,
    expiringAt: null,
    expiringSentAt: null,
  };
}

async function seed(store: Store): Promise<void> {
  const at = new Date().toISOString();
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  for (let i = 0; i < WAITING; i++) {
    const session = `idle-${i}`;
    await store.ensureSession({ id: session, agent: 'bookstore', principal: 'c-100', at });
    await store.acquireLease({ session, owner: 'seed', untilMs: Date.now() + 60_000, nowMs: Date.now() });
    const argsJson = '{"orderId":1044}';
    const { createHash } = await import('node:crypto');
    const argsHash = createHash('sha256').update(argsJson).digest('hex');
    await store.commitStep({
      session,
      leaseOwner: 'seed',
      expectedMessageCount: 0,
      append: [
        {
          role: 'assistant',
          text: '',
          calls: [{ id: `call-${i}`, tool: 'cancel_order', args: { orderId: 1044 } }],
        },
      ],
      batch: {
        messageSeq: 0,
        calls: [
          {
            callId: `call-${i}`,
            tool: 'cancel_order',
            disposition: { kind: 'approval', approvalId: `apr-${i}` },
          },
        ],
      } as never,
      approvals: [
        {
          id: `apr-${i}`,
          session,
          agent: 'bookstore',
          callId: `call-${i}`,
          tool: 'cancel_order',
          args: { orderId: 1044 },
          argsJson,
          argsHash,
          effect: 'Cancels order 1044.',
          createdAt: at,
          expiresAt,
          status: 'pending',
          decision: null,
          raisedBy: null,
          kind: 'tool-call',
          run: null,
          customer: 'c-100',
          requiredRole: null,
          claim: null,
          escalatedTo: null,
          nudges: nudgesOf(i, at),
          ...waitingFields('Cancels order 1044.'),
        },
      ],
      audit: [
        {
          kind: 'request.raised',
          session,
          requestId: `apr-${i}`,
          actor: 'bookstore',
          data: {
            tool: 'cancel_order',
            toolIdentity: 'cancel_order',
            args: argsJson,
            argsHash,
            effect: 'Cancels order 1044.',
            expiresAt,
            createdAt: at,
            raisedBy: null,
            status: 'pending',
            agent: 'bookstore',
            callId: `call-${i}`,
            customer: 'c-100',
            requiredRole: null,
            run: null,
          },
        },
      ],
      releaseLease: true,
      at,
    });
  }
}

function counting(store: Store) {
  const calls = new Map<string, number>();
  let rows = 0;
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1);
        const result = value.apply(target, args);
        if (result instanceof Promise)
          return result.then((out: unknown) => {
            if (Array.isArray(out)) rows += out.length;
            return out;
          });
        return result;
      };
    },
  });
  return {
    proxy,
    reset() {
      calls.clear();
      rows = 0;
    },
    report() {
      const perSecond = Object.fromEntries(
        [...calls].sort().map(([name, count]) => [name, Math.round((count / seconds) * 100) / 100]),
      );
      const total = [...calls.values()].reduce((a, b) => a + b, 0);
      return {
        callsPerSecond: Math.round((total / seconds) * 100) / 100,
        rowsPerSecond: Math.round(rows / seconds),
        perSecond,
      };
    },
  };
}

async function measure(name: string, withListeners: boolean, decidedElsewhere = 0): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-idle-'));
  const store = createSqliteStore({ path: join(dir, 'store.db') });
  const hook = createHttpServer((_request, response) => response.writeHead(204).end());
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  try {
    await seed(store);
    const counted = counting(store);
    const server = createServer({
      agents: [bookstoreAgent.with({ model: createDemoModel() })],
      store: counted.proxy,
      approvers: [{ name: 'alice', roles: ['support'], token: 'alice-token-0123456789' }],
      log: () => undefined,
      ...(withListeners
        ? {
            webhook: {
              url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/`,
              secret: 'idle-secret',
            },
          }
        : {}),
    });
    let stream: ReadableStreamDefaultReader<Uint8Array> | undefined;
    if (withListeners) {
      const response = await server.app.request('/v1/events', {
        headers: { authorization: 'Bearer alice-token-0123456789' },
      });
      stream = response.body!.getReader();
      void (async () => {
        while (!(await stream.read()).done);
      })().catch(() => undefined);
    }
    // Past start-up (the first watcher pass, the followers finding their place).
    await new Promise((resolve) => setTimeout(resolve, 2500));
    counted.reset();
    const window = new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    if (decidedElsewhere > 0) {
      // Another process on the same file (`countersign approve`): its decisions never reach this server's bus.
      const other = createSqliteStore({ path: join(dir, 'store.db') });
      for (let i = 0; i < decidedElsewhere; i++) {
        const at = new Date().toISOString();
        await other.decide(`apr-${i}`, { verdict: 'rejected', by: 'cli', reason: 'no', at, kind: 'person' }, [
          {
            kind: 'request.decided',
            session: `idle-${i}`,
            requestId: `apr-${i}`,
            actor: 'cli',
            data: {
              verdict: 'rejected',
              reason: 'no',
              tool: 'cancel_order',
              args: '{"orderId":1044}',
              argsHash: 'x',
            },
          },
        ]);
      }
      await other.close();
    }
    await window;
    const report = counted.report();
    await stream?.cancel().catch(() => undefined);
    await server.close();
    process.stdout.write(
      `${JSON.stringify({ configuration: name, waiting: WAITING, seconds, ...report })}\n`,
    );
  } finally {
    await store.close();
    hook.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await measure('server, no streams, no webhooks', false);
await measure('server, one /v1/events stream, webhooks on', true);
await measure('server, one /v1/events stream, webhooks on, 100 decided by another process', true, 100);
