import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { cutProxy } from '../../../test/helpers/cut-proxy.ts';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
  withApplicationName,
} from '../../../test/helpers/postgres.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { createPostgresStore } from '../../store/postgres/postgres-store.ts';
import { livenessCases } from '../conformance/liveness-cases.ts';
import { CONFIRM_MS, deadOwners } from '../dead-owners.ts';
import { formatOwner } from '../lease-owner.ts';
import type { Liveness, LivenessChange } from '../liveness.ts';
import { type LivenessEvent, watchLiveness } from '../liveness-log.ts';
import type { ProcessSpace } from '../process-space.ts';
import {
  createPostgresLiveness,
  keyOfToken,
  livenessApplicationName,
  type PostgresLivenessOptions,
} from './postgres-liveness.ts';

const url = await postgresForTests();
const server = url ?? TEST_PG_URL;
const pool = new pg.Pool({ connectionString: server, max: 2 });
pool.on('error', () => undefined);
const query: PostgresLivenessOptions['query'] = async (text, values = []) =>
  (await pool.query(text, [...values])).rows as Array<Record<string, unknown>>;

const observer: ProcessSpace = { hostname: 'observer', space: 'observer/2.00000000000000aa', pid: 2 };
const ownerWith = (token: string | null) => formatOwner('holder/1.00000000000000bb', 1, 'n', token);

/** The backend pid holding `token`'s lock right now, or null. */
async function holderPid(token: string): Promise<number | null> {
  const key = keyOfToken(token);
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted
         AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [String(key)],
    );
    return rows[0]?.pid ?? null;
  });
}

async function until<T>(probe: () => Promise<T | null | undefined | false>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A TCP proxy whose open connections can be frozen: bytes stop in both directions and a close
 * from either side is not passed on, as when a server vanished or a NAT entry was dropped
 * and this side's socket still looks open. New connections pass as usual.
 */
async function freezableProxy(port: number) {
  const pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  const proxy: Server = createServer((client) => {
    const upstream = new Socket();
    const pair = { client, upstream, frozen: false };
    pairs.add(pair);
    upstream.connect(port, '127.0.0.1');
    client.on('data', (data) => !pair.frozen && upstream.write(data));
    upstream.on('data', (data) => !pair.frozen && client.write(data));
    const end = () => {
      if (pair.frozen) return;
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: server.replace(/@[^/]+\//, `@127.0.0.1:${(proxy.address() as AddressInfo).port}/`),
    freeze() {
      for (const pair of pairs) pair.frozen = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const { client, upstream } of pairs) {
          client.destroy();
          upstream.destroy();
        }
        proxy.close(() => resolve());
      }),
  };
}

/**
 * A TCP proxy standing for a server that restarts: while `down`, every open connection is
 * closed and every new one is closed at once (as a server shutting down or still starting
 * up refuses its clients). `refused` counts the connections turned away.
 */
async function restartingProxy(port: number) {
  const open = new Set<Socket>();
  let down = false;
  let refused = 0;
  const proxy: Server = createServer((client) => {
    if (down) {
      refused += 1;
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(port, '127.0.0.1');
    client.pipe(upstream);
    upstream.pipe(client);
    for (const socket of [client, upstream]) {
      open.add(socket);
      const end = () => {
        client.destroy();
        upstream.destroy();
        open.delete(socket);
      };
      socket.on('close', end).on('error', end);
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: server.replace(/@[^/]+\//, `@127.0.0.1:${(proxy.address() as AddressInfo).port}/`),
    refused: () => refused,
    down() {
      down = true;
      for (const socket of [...open]) socket.destroy();
    },
    up() {
      down = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...open]) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}

describe.skipIf(url === null)('PostgreSQL liveness', () => {
  const opened: Liveness[] = [];
  const children: ChildProcess[] = [];
  const open = (options: Partial<PostgresLivenessOptions> = {}) => {
    const liveness = createPostgresLiveness({ connectionString: server, query, ...options });
    opened.push(liveness);
    return liveness;
  };
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(opened.map((liveness) => liveness.close()));
    await pool.end();
  });

  livenessCases('postgres', {
    open: async () => open(),
    crossHost: true,
    async cut(process) {
      const pid = await holderPid((await process.token())!);
      await withAdmin((client) => client.query('SELECT pg_terminate_backend($1)', [pid]));
    },
  });

  it('a SIGKILLed process’s token is released as soon as its socket closes', async () => {
    const fixture = fileURLToPath(new URL('holder.fixture.ts', import.meta.url));
    const child = spawn(process.execPath, [fixture, server], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const line = await new Promise<string>((resolve) =>
      child.stdout?.once('data', (data) => resolve(String(data))),
    );
    const { token } = JSON.parse(line) as { token: string };
    const other = open();
    expect(await other.released([token])).toEqual(new Set());
    const killed = Date.now();
    child.kill('SIGKILL');
    await until(async () => (await other.released([token])).has(token));
    const releasedMs = Date.now() - killed;
    console.info(`token released ${releasedMs} ms after the SIGKILL`);
    expect(releasedMs).toBeLessThan(1000);
    expect(await deadOwners([ownerWith(token)], other, { here: observer })).toEqual(
      new Set([ownerWith(token)]),
    );
  });

  it('its connection terminated: lost, held again with the same token before anyone may judge it dead', async () => {
    const holder = open();
    const token = await holder.token();
    expect(token).toMatch(/^pg[0-9a-f]+$/);
    const changes: Array<LivenessChange & { at: number }> = [];
    holder.onChange((change) => changes.push({ ...change, at: Date.now() }));
    const before = await holderPid(token!);
    const other = open();
    const terminated = Date.now();
    await withAdmin((client) => client.query('SELECT pg_terminate_backend($1)', [before]));
    // Asked at once, as a takeover watch might be: the token may be released for a moment,
    // but not at both looks CONFIRM_MS apart.
    expect(await deadOwners([ownerWith(token)], other, { here: observer })).toEqual(new Set());
    const after = await until(async () => {
      const pid = await holderPid(token!);
      return pid !== null && pid !== before ? pid : null;
    });
    expect(after).not.toBe(before);
    expect(await holder.token()).toBe(token);
    // An attempt may find the key still locked by the terminated backend (`retry`): not a change.
    const held = changes.filter((change) => !change.retry);
    expect(held.map(({ held, token: t }) => ({ held, token: t }))).toEqual([
      { held: false, token },
      { held: true, token },
    ]);
    expect(held[0]!.reason).toBe('terminating connection due to administrator command');
    const gapMs = held[1]!.at - held[0]!.at;
    console.info(
      `liveness lock held again ${gapMs} ms after it was lost (${held[1]!.at - terminated} ms after the terminate)`,
    );
    expect(gapMs).toBeLessThan(CONFIRM_MS);
  });

  it('a server restart: its lock held again before anyone may judge it dead, however long the restart', async () => {
    const proxy = await restartingProxy(Number(new URL(server).port || 5432));
    try {
      const holder = open({ connectionString: proxy.url });
      const token = (await holder.token())!;
      const changes: LivenessChange[] = [];
      holder.onChange((change) => changes.push(change));
      const other = open();
      proxy.down();
      // A long restart: the holder has backed off to its slowest pace.
      await until(async () => proxy.refused() >= 10, 20_000);
      // The server is back just after an attempt was turned away: the holder's next attempt
      // is a whole pause away, while a judge may look at once (a takeover watch's tick).
      const refused = proxy.refused();
      await until(async () => proxy.refused() > refused, 5000);
      proxy.up();
      expect(await deadOwners([ownerWith(token)], other, { here: observer })).toEqual(new Set());
      expect(await until(() => holder.token(), 3000)).toBe(token);
      // Listeners heard the loss, every attempt turned away (each with its error), the hold.
      const [loss, ...rest] = changes;
      const again = rest.pop();
      expect(loss).toMatchObject({ held: false, token });
      expect(rest.length).toBeGreaterThanOrEqual(10);
      for (const attempt of rest)
        expect(attempt).toEqual({ held: false, token, reason: expect.stringMatching(/./), retry: true });
      expect(again).toEqual({ held: true, token });
    } finally {
      await proxy.close();
    }
  });

  it('its key locked by another session when it lost it: each attempt says so, it is seen alive, and it holds it once freed', async () => {
    const holder = open();
    const token = (await holder.token())!;
    const key = String(keyOfToken(token));
    const changes: LivenessChange[] = [];
    holder.onChange((change) => changes.push(change));
    // What serve and worker log of it, reminders 100 ms apart rather than 30 s.
    const logged: LivenessEvent[] = [];
    watchLiveness(holder, (event) => logged.push(event), { firstReminderMs: 100, reminderGapMaxMs: 100 });
    const other = open();
    const taker = new pg.Client({ connectionString: server });
    await taker.connect();
    try {
      // Waits for the key; granted the moment the holder's backend ends, before it reconnects.
      const taken = taker.query('SELECT pg_advisory_lock($1::bigint)', [key]);
      await until(() =>
        withAdmin(async (client) => {
          const { rows } = await client.query(
            `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND NOT granted
               AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
            [key],
          );
          return rows.length > 0;
        }),
      );
      const before = await holderPid(token);
      await withAdmin((client) => client.query('SELECT pg_terminate_backend($1)', [before]));
      await taken;
      expect(await holderPid(token)).toBe((await taker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await until(async () => changes.filter((change) => change.retry).length >= 3);
      await until(async () => logged.length >= 2);
      expect(await holder.token()).toBeNull();
      expect(await deadOwners([ownerWith(token)], other, { here: observer })).toEqual(new Set());
      await taker.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
      expect(await until(() => holder.token(), 3000)).toBe(token);
      const [loss, ...rest] = changes;
      const again = rest.pop();
      expect(loss).toEqual({
        held: false,
        token,
        reason: 'terminating connection due to administrator command',
      });
      expect(new Set(rest.map((change) => JSON.stringify(change)))).toEqual(
        new Set([
          JSON.stringify({ held: false, token, reason: 'its key is locked by another session', retry: true }),
        ]),
      );
      expect(again).toEqual({ held: true, token });
      // One line for the loss, reminders naming the latest failure, one for the hold.
      const reminders = logged.slice(1, -1);
      expect(logged[0]).toEqual({ event: 'liveness', held: false, token, reason: loss!.reason });
      expect(reminders.length).toBeGreaterThanOrEqual(1);
      expect(
        reminders.map((reminder) => 'attempts' in reminder && reminder.attempts).at(-1),
      ).toBeLessThanOrEqual(rest.length);
      for (const reminder of reminders)
        expect(reminder).toMatchObject({
          still: true,
          token,
          reason: 'its key is locked by another session',
        });
      expect(logged.at(-1)).toEqual({
        event: 'liveness',
        held: true,
        token,
        lostMs: expect.any(Number),
        attempts: rest.length,
      });
    } finally {
      await taker.end();
    }
  });

  it('its connection is named after this process and its token, unless the URL or PGAPPNAME names it', async () => {
    const nameOf = (token: string) =>
      withAdmin(async (client) => {
        const { rows } = await client.query<{ name: string }>(
          'SELECT application_name AS name FROM pg_stat_activity WHERE pid = $1',
          [await holderPid(token)],
        );
        return rows[0]?.name;
      });
    const plain = open();
    const token = (await plain.token())!;
    expect(await nameOf(token)).toBe(`countersign-liveness ${process.pid} ${token}`);
    expect(livenessApplicationName(2n ** 62n - 1n, 4_294_967_295)).toBe(
      'countersign-liveness 4294967295 pg3fffffffffffffff',
    );
    expect(Buffer.byteLength(livenessApplicationName(2n ** 62n - 1n, 4_294_967_295))).toBeLessThanOrEqual(63);
    const app = `cs_test_named_${process.pid}`;
    const named = open({ connectionString: withApplicationName(server, app) });
    expect(await nameOf((await named.token())!)).toBe(app);
    const previous = process.env.PGAPPNAME;
    process.env.PGAPPNAME = `${app}_env`;
    try {
      const fromEnv = open();
      expect(await nameOf((await fromEnv.token())!)).toBe(`${app}_env`);
    } finally {
      if (previous === undefined) delete process.env.PGAPPNAME;
      else process.env.PGAPPNAME = previous;
    }
  });

  it('an owner naming a key some unrelated session holds is alive; the two-key form of its bits is not that key', async () => {
    const other = open();
    const unrelated = new pg.Client({ connectionString: server });
    await unrelated.connect();
    try {
      const held = ownerWith('pg1234abcd');
      const twoKey = ownerWith('pg5000000007');
      await unrelated.query('SELECT pg_advisory_lock($1::bigint)', [String(0x1234abcd)]);
      // pg_advisory_lock(5, 7) sets classid 5 and objid 7, as the one-bigint key 0x500000007 does.
      await unrelated.query('SELECT pg_advisory_lock(5, 7)');
      expect(await deadOwners([held, twoKey], other, { here: observer, confirmMs: 10 })).toEqual(
        new Set([twoKey]),
      );
    } finally {
      await unrelated.end();
    }
  });

  it('a process that cannot see its own lock where it reads judges nobody dead (the lock URL names another database)', async () => {
    // All processes alike misconfigured: the locks in one database, the reads in another
    // (a liveness URL naming the wrong database, or a replica): every key looks released.
    const database = `cs_test_liveness_${process.pid}_${Date.now()}`;
    await withAdmin((client) => client.query(`CREATE DATABASE ${database}`));
    const elsewhere = server.replace(/\/[^/?]*(\?|$)/, `/${database}$1`);
    try {
      const holder = open({ connectionString: elsewhere });
      const judge = open({ connectionString: elsewhere });
      const token = (await holder.token())!;
      expect(await judge.token()).not.toBeNull();
      expect(await deadOwners([ownerWith(token)], judge, { here: observer, confirmMs: 10 })).toEqual(
        new Set(),
      );
      await holder.close();
      await judge.close();
    } finally {
      await withAdmin((client) => client.query(`DROP DATABASE ${database} WITH (FORCE)`));
    }
  });

  it('no answer: the lock is held on a new connection before the old one is let go', async () => {
    const port = Number(new URL(server).port || 5432);
    const proxy = await freezableProxy(port);
    try {
      const holder = open({ connectionString: proxy.url, checkMs: 100, timeoutMs: 300 });
      const token = (await holder.token())!;
      const changes: LivenessChange[] = [];
      holder.onChange((change) => changes.push(change));
      const first = await holderPid(token);
      proxy.freeze();
      // Pings go unanswered; each attempt on a new connection finds the key held by the old
      // backend, which the server still has: it is kept, and others see the process alive.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      expect(await holderPid(token)).toBe(first);
      expect(await open().released([token])).toEqual(new Set());
      expect(await holder.token()).toBe(token);
      // The server ends the old backend, but this side never hears of it (frozen): the next
      // unanswered ping's new connection gets the lock.
      await withAdmin((client) => client.query('SELECT pg_terminate_backend($1)', [first]));
      const second = await until(async () => {
        const pid = await holderPid(token);
        return pid !== null && pid !== first ? pid : null;
      });
      expect(second).not.toBe(first);
      expect(changes).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('while it cannot hold a lock its token is null, and it takes it as soon as it can', async () => {
    const proxy = await cutProxy({ host: '127.0.0.1', port: Number(new URL(server).port || 5432) });
    try {
      proxy.cut();
      const proxied = server.replace(/@[^/]+\//, `@${new URL(proxy.url).host}/`);
      const holder = open({ connectionString: proxied, timeoutMs: 200 });
      expect(await holder.token()).toBeNull();
      const changes: LivenessChange[] = [];
      holder.onChange((change) => changes.push(change));
      proxy.release();
      const token = await until(() => holder.token(), 3000);
      expect(await holderPid(token)).not.toBeNull();
      expect(changes).toEqual([{ held: true, token }]);
    } finally {
      await proxy.close();
    }
  });

  it('a store that never mints a lease owner opens no liveness connection; the first owner opens one', async () => {
    const schema = freshSchema('liveness_lazy');
    const app = `cs_test_lazy_${process.pid}_${Date.now()}`;
    const store = await createPostgresStore({ connectionString: withApplicationName(server, app), schema });
    const lockHolders = () =>
      withAdmin(async (client) => {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
            WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted`,
          [app],
        );
        return rows[0]?.n ?? 0;
      });
    try {
      await store.getSession('nobody');
      await store.liveness.released(['pg1']);
      expect(await lockHolders()).toBe(0);
      expect(await store.liveness.token()).toMatch(/^pg[0-9a-f]+$/);
      expect(await lockHolders()).toBe(1);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('released() fails with STORE_UNAVAILABLE when the store cannot be asked, and the store owns its liveness', async () => {
    const schema = freshSchema('liveness');
    const proxy = await cutProxy({ host: '127.0.0.1', port: Number(new URL(server).port || 5432) });
    const proxied = server.replace(/@[^/]+\//, `@${new URL(proxy.url).host}/`);
    const store = await createPostgresStore({
      connectionString: proxied,
      schema,
      pool: { connectionTimeoutMillis: 300 },
      liveness: { connectionString: server },
    });
    try {
      const token = (await store.liveness.token())!;
      expect(await store.liveness.released([token])).toEqual(new Set());
      proxy.cut();
      await expect(store.liveness.released([token])).rejects.toBeInstanceOf(StoreUnavailableError);
      // The lock is on its own (direct) connection: still held.
      expect(await holderPid(token)).not.toBeNull();
      proxy.release();
      await store.close();
      await until(async () => (await holderPid(token)) === null);
      const plain = await createPostgresStore({ connectionString: server, schema, liveness: false });
      expect(plain.liveness.kind).toBe('local');
      expect(await plain.liveness.token()).toBeNull();
      await plain.close();
    } finally {
      await proxy.close();
      await dropSchema(schema);
    }
  });
});
