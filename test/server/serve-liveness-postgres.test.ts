import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  dropSchema,
  freshSchema,
  livenessBackend,
  postgresForTests,
  storeUrl,
  terminateBackend,
} from '../helpers/postgres.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';

const pg = await postgresForTests();

const tokens = 'svc:service:svc-token-123456';

const LOST =
  /Lost the liveness lock \(terminating connection due to administrator command\); holding it again\. Meanwhile other hosts may take over the sessions this server runs\./;
const HELD = /Holding the liveness lock again after (\d+ ms|\d+\.\d s): other hosts see this server alive\./;

/**
 * `countersign serve` on PostgreSQL whose liveness lock connection is terminated while it
 * lives: it says so, and says when it holds the lock again, and only its own connection was
 * ended — another serve process's lock connection (found the same way) is untouched.
 */
describe.skipIf(pg === null)('serve on PostgreSQL: its liveness lock lost and held again', () => {
  const schema = freshSchema('serve_liveness');
  const children: ServeProcess[] = [];
  afterAll(async () => {
    for (const child of children) await child.stop();
    await dropSchema(schema);
  });

  it('prints a line when its lock connection is terminated and one when it holds the lock again', async () => {
    // The plain URL: no application_name, so each lock connection carries its process's own.
    const [a, b] = await Promise.all([
      startServe({ COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_TOKENS: tokens }),
      startServe({ COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_TOKENS: tokens }),
    ]);
    children.push(a!, b!);
    // A server takes its lock at its first lease: a message starts a run.
    for (const [server, session] of [
      [a!, 'live-a'],
      [b!, 'live-b'],
    ] as const) {
      const posted = await fetch(`${server.base}/v1/sessions/${session}/messages`, {
        method: 'POST',
        headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Please cancel my order 1044.', user: 'c-100' }),
      });
      expect(posted.status).toBe(200);
    }
    const aLock = (await livenessBackend(a!.child.pid!))!;
    const bLock = (await livenessBackend(b!.child.pid!))!;
    expect(aLock.name).toMatch(new RegExp(`^countersign-liveness ${a!.child.pid} pg[0-9a-f]+$`));
    expect(bLock.name).toMatch(new RegExp(`^countersign-liveness ${b!.child.pid} pg[0-9a-f]+$`));
    expect(aLock.pid).not.toBe(bLock.pid);
    expect(a!.stdout()).not.toMatch(/liveness lock/);

    expect(await terminateBackend(aLock)).toBe(true);
    await vi.waitFor(() => expect(a!.stdout()).toMatch(HELD), { timeout: 10_000, interval: 20 });
    const printed = a!.stdout().split('\n');
    const lost = printed.findIndex((line) => LOST.test(line));
    const held = printed.findIndex((line) => HELD.test(line));
    expect(lost).toBeGreaterThan(0);
    expect(held).toBe(lost + 1);
    expect(printed.filter((line) => /liveness lock/.test(line))).toHaveLength(2);
    console.info(`serve printed:\n${printed[lost]}\n${printed[held]}`);

    // Held again by a new backend under the same name (the same token); b's never changed.
    const aAgain = (await livenessBackend(a!.child.pid!))!;
    expect(aAgain.name).toBe(aLock.name);
    expect(aAgain.pid).not.toBe(aLock.pid);
    expect(await livenessBackend(b!.child.pid!)).toEqual(bLock);
    expect(b!.stdout()).not.toMatch(/liveness lock/);
    expect(a!.child.exitCode).toBeNull();
  }, 60_000);
});
