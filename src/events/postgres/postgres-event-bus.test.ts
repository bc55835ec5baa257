import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresForTests, TEST_PG_URL, withAdmin } from '../../../test/helpers/postgres.ts';
import type { CountersignEvent } from '../event-bus.ts';
import {
  createPostgresEventBus,
  decodeNotification,
  encodeNotification,
  NOTIFY_PAYLOAD_LIMIT,
  type PostgresEventBus,
} from './postgres-event-bus.ts';

const url = await postgresForTests();

const decided: CountersignEvent = {
  type: 'approval.decided',
  at: '2026-11-30T05:00:00.000Z',
  requestId: 'req_1',
  session: 's1',
  verdict: 'approved',
  by: 'mona',
  kind: 'person',
};

/** An approval.requested whose arguments alone are over the NOTIFY limit (multi-byte text). */
const huge: CountersignEvent = {
  type: 'approval.requested',
  at: '2026-11-30T05:00:01.000Z',
  approval: {
    id: 'req_2',
    kind: 'tool-call',
    run: null,
    agent: 'mail',
    callId: 'call-2',
    customer: null,
    requiredRole: null,
    claim: null,
    escalatedTo: null,
    nudges: null,
    session: 's1',
    tool: 'send_email',
    args: { body: 'Crème brûlée ✓ '.repeat(1000) },
    argsHash: 'ab'.repeat(32),
    effect: 'write',
    createdAt: '2026-11-30T05:00:01.000Z',
    expiresAt: '2026-12-01T05:00:01.000Z',
    status: 'pending',
    decision: null,
    raisedBy: null,
    integrity: 'ok',
    editable: [],
    approvalsNeeded: 1,
    approvals: [],
    edit: null,
  },
};

const freshChannel = () => `cs_test_events_${randomBytes(5).toString('hex')}`;

/** Resolves with the next `count` events the bus delivers, or rejects after `ms`. */
function collect(bus: PostgresEventBus, count: number, ms = 10_000): Promise<CountersignEvent[]> {
  return new Promise((resolve, reject) => {
    const seen: CountersignEvent[] = [];
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`saw ${seen.length} of ${count} events within ${ms} ms`));
    }, ms);
    const stop = bus.subscribe((event) => {
      seen.push(event);
      if (seen.length === count) {
        clearTimeout(timer);
        stop();
        resolve(seen);
      }
    });
  });
}

function publishFromChild(channel: string, events: CountersignEvent[]): Promise<void> {
  const script = fileURLToPath(new URL('publish.fixture.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [script, url ?? TEST_PG_URL, channel, JSON.stringify(events)],
      { timeout: 30_000 },
      (error, _stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve()),
    );
  });
}

/** The pids of the backends listening on `channel` (their last statement was the LISTEN). */
async function listeners(channel: string): Promise<number[]> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE query = $1 ORDER BY pid',
      [`LISTEN "${channel}"`],
    );
    return rows.map((row) => row.pid);
  });
}

describe('PostgreSQL event payloads', () => {
  it('sends a small event whole and decodes it back', () => {
    const payload = encodeNotification(decided);
    expect(JSON.parse(payload)).toEqual({ event: decided });
    expect(decodeNotification(payload)).toEqual(decided);
  });

  it('trims an event over the limit to its type, time and ids, and marks it trimmed', () => {
    const payload = encodeNotification(huge);
    expect(Buffer.byteLength(payload)).toBeLessThan(NOTIFY_PAYLOAD_LIMIT);
    expect(JSON.parse(payload)).toMatchObject({ trimmed: true });
    const event = decodeNotification(payload);
    expect(event).toMatchObject({
      type: 'approval.requested',
      at: huge.at,
      approval: { id: 'req_2', session: 's1', tool: 'send_email', args: null },
    });
  });

  it('ignores anything else sent on the channel', () => {
    expect(decodeNotification('not json')).toBeNull();
    expect(decodeNotification('{"event":{"type":"other"}}')).toBeNull();
    expect(decodeNotification('null')).toBeNull();
    expect(decodeNotification(undefined)).toBeNull();
  });

  it('refuses a channel name that is not a plain identifier', () => {
    expect(() => createPostgresEventBus({ connectionString: TEST_PG_URL, channel: 'a"; DROP' })).toThrow(
      /not valid/,
    );
  });
});

describe.skipIf(url === null)('PostgreSQL event bus on a real server', () => {
  const buses: PostgresEventBus[] = [];
  const open = (channel: string) => {
    const bus = createPostgresEventBus({ connectionString: url ?? TEST_PG_URL, channel, backoffMs: 50 });
    buses.push(bus);
    return bus;
  };

  afterEach(async () => {
    for (const bus of buses.splice(0)) await bus.close();
  });

  it('delivers what another process publishes, a trimmed event included', async () => {
    const channel = freshChannel();
    const bus = open(channel);
    const received = collect(bus, 2);
    await bus.listening();
    await publishFromChild(channel, [decided, huge]);
    const [first, second] = await received;
    expect(first).toEqual(decided);
    expect(second).toMatchObject({ type: 'approval.requested', approval: { id: 'req_2', args: null } });
  });

  it('delivers its own publications to its subscribers once, and nothing from other channels', async () => {
    const channel = freshChannel();
    const bus = open(channel);
    const other = open(freshChannel());
    const received = collect(bus, 2);
    await bus.listening();
    await other.publish({ ...decided, requestId: 'elsewhere' });
    await bus.publish(decided);
    await bus.publish({ ...decided, requestId: 'req_3' });
    expect((await received).map((event) => (event as { requestId: string }).requestId)).toEqual([
      'req_1',
      'req_3',
    ]);
  });

  it('listens again after its connection is terminated', async () => {
    const channel = freshChannel();
    const bus = open(channel);
    bus.subscribe(() => {});
    await bus.listening();
    const [before] = await listeners(channel);
    expect(before).toBeTypeOf('number');
    await withAdmin((client) => client.query('SELECT pg_terminate_backend($1)', [before]));

    let after: number[] = [];
    for (let i = 0; i < 100; i++) {
      after = (await listeners(channel)).filter((pid) => pid !== before);
      if (after.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(after).toHaveLength(1);
    await bus.listening();

    const received = collect(bus, 1);
    await publishFromChild(channel, [decided]);
    expect(await received).toEqual([decided]);
  });

  it('close() ends the listening connection', async () => {
    const channel = freshChannel();
    const bus = open(channel);
    await bus.listening();
    expect(await listeners(channel)).toHaveLength(1);
    await bus.close();
    for (let i = 0; i < 40 && (await listeners(channel)).length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await listeners(channel)).toEqual([]);
    await expect(bus.publish(decided)).rejects.toThrow(/closed/);
  });
});
