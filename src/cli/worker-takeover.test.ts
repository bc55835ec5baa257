import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatOwner } from '../liveness/lease-owner.ts';
import type { Liveness } from '../liveness/liveness.ts';
import { localLiveness } from '../liveness/local/local-liveness.ts';
import type { ContinuationJob, ContinuationQueue } from '../queue/continuation-queue.ts';
import type { LeaseInfo } from '../store/store.ts';
import { workerLogLine } from './worker-log-line.ts';
import { startTakeoverWatch, takeOverDeadHolders } from './worker-takeover.ts';

/** A pid that existed and is gone: a child that has exited and been reaped. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

function fakes(inHand: string[], leases: Record<string, string | null>, liveness?: Liveness) {
  const enqueued: ContinuationJob[] = [];
  const queue: ContinuationQueue = {
    async enqueue(job) {
      enqueued.push(job);
    },
    work: async () => undefined,
    close: async () => undefined,
    inHand: async () => [...inHand],
  };
  const store = {
    liveness,
    async getLease(session: string): Promise<LeaseInfo | null> {
      const owner = leases[session];
      return owner === undefined ? null : { owner, untilMs: Date.now() + 20_000 };
    },
  };
  return { queue, store, enqueued };
}

describe('takeOverDeadHolders (unit, fake queue and store)', () => {
  const dead = `${hostname()}:${deadPid()}:abc`;
  const alive = `${hostname()}:${process.pid}:def`;
  const elsewhere = 'another-host:1:ghi';

  it('hands on only jobs whose lease holder is a dead process of this host, once per holder', async () => {
    const { queue, store, enqueued } = fakes(['s-dead', 's-alive', 's-free', 's-remote', 's-dead'], {
      's-dead': dead,
      's-alive': alive,
      's-free': null,
      's-remote': elsewhere,
    });
    const seen = new Map<string, string>();
    expect(await takeOverDeadHolders({ store, queue }, seen)).toEqual([{ session: 's-dead', holder: dead }]);
    expect(enqueued).toEqual([{ session: 's-dead', reason: 'taken-over' }]);
    // The old job is still in hand until pg-boss times it out: not enqueued again.
    expect(await takeOverDeadHolders({ store, queue }, seen)).toEqual([]);
    expect(enqueued).toHaveLength(1);
  });

  it('hands on a job whose holder elsewhere has a released token, asking once for all of them', async () => {
    const remote = (token: string) => formatOwner('another-host/1.0123456789abcdef', 7, 'n', token);
    const asked: string[][] = [];
    // pgdead stays released at both looks; pgblip is held again at the second (a reconnect).
    const answers = [new Set(['pgdead', 'pgblip']), new Set(['pgdead'])];
    const liveness: Liveness = {
      ...localLiveness,
      async released(tokens) {
        asked.push([...tokens]);
        const answer = answers.shift() ?? new Set();
        return new Set(tokens.filter((token) => answer.has(token)));
      },
    };
    const { queue, store, enqueued } = fakes(
      ['s-gone', 's-blip', 's-live', 's-old'],
      {
        's-gone': remote('pgdead'),
        's-blip': remote('pgblip'),
        's-live': remote('pglive'),
        's-old': elsewhere,
      },
      liveness,
    );
    expect(await takeOverDeadHolders({ store, queue }, new Map())).toEqual([
      { session: 's-gone', holder: remote('pgdead') },
    ]);
    expect(enqueued).toEqual([{ session: 's-gone', reason: 'taken-over' }]);
    expect(asked).toEqual([
      ['pgdead', 'pgblip', 'pglive'],
      ['pgdead', 'pgblip'],
    ]);
  });

  it('forgets sessions no longer in hand, and does nothing for a queue that cannot list them', async () => {
    const inHand = ['s-dead'];
    const { queue, store } = fakes(inHand, { 's-dead': dead });
    const seen = new Map<string, string>();
    await takeOverDeadHolders({ store, queue }, seen);
    expect(seen.size).toBe(1);
    inHand.length = 0;
    await takeOverDeadHolders({ store, queue }, seen);
    expect(seen.size).toBe(0);
    const { inHand: _unused, ...plain } = queue;
    expect(await takeOverDeadHolders({ store, queue: plain }, new Map())).toEqual([]);
  });
});

describe('startTakeoverWatch while its looks fail (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A watch looking every second at a queue whose inHand throws `failure` while it is set. */
  function failingWatch() {
    const state: { failure: Error | null; looks: number } = { failure: null, looks: 0 };
    const { queue, store } = fakes([], {});
    queue.inHand = async () => {
      state.looks += 1;
      if (state.failure) throw state.failure;
      return [];
    };
    const lines: Array<Record<string, unknown>> = [];
    const watch = startTakeoverWatch({ store, queue, intervalMs: 1000, log: (line) => lines.push(line) });
    return { state, lines, watch };
  }

  it('one line when looks start failing, reminders at 30 s, 1, 2, 4 min whatever the message, one when a look works again', async () => {
    vi.useFakeTimers();
    const { state, lines, watch } = failingWatch();
    await vi.advanceTimersByTimeAsync(2000);
    expect(lines).toEqual([]);
    const looksBefore = state.looks;
    state.failure = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    await vi.advanceTimersByTimeAsync(1000);
    expect(lines).toEqual([{ event: 'takeover-failed', message: 'connect ECONNREFUSED 127.0.0.1:5432' }]);
    // Another message mid-outage (the server refusing, then half up) is the same outage.
    await vi.advanceTimersByTimeAsync(10_000);
    state.failure = new Error('Connection terminated unexpectedly');
    await vi.advanceTimersByTimeAsync(20_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual({
      event: 'takeover-failed',
      still: true,
      failedMs: 30_000,
      attempts: 31,
      message: 'Connection terminated unexpectedly',
    });
    // A refused connect to ::1 and 127.0.0.1 (`localhost`) is an AggregateError without a message.
    state.failure = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
    await vi.advanceTimersByTimeAsync(4 * 60_000);
    const reminders = lines.filter((line) => line.still === true);
    expect(reminders.map((line) => Number(line.failedMs) / 1000)).toEqual([30, 60, 120, 240]);
    expect(reminders.at(-1)?.message).toBe('ECONNREFUSED');
    expect(lines.filter((line) => line.event === 'takeover-failed')).toHaveLength(5);
    const failedLooks = state.looks - looksBefore;
    expect(failedLooks).toBe(271);

    state.failure = null;
    await vi.advanceTimersByTimeAsync(1000);
    expect(lines.at(-1)).toEqual({ event: 'takeover-recovered', failedMs: 271_000, attempts: failedLooks });
    expect(lines.map(workerLogLine)).toEqual([
      'Cannot look for sessions of dead workers (connect ECONNREFUSED 127.0.0.1:5432). Until it can, this worker takes over no session whose worker died; it keeps trying and will say when it can again.',
      'Still cannot look for sessions of dead workers after 30.0 s (31 failed attempts; the last: Connection terminated unexpectedly). Meanwhile this worker takes over no session whose worker died; it keeps trying.',
      'Still cannot look for sessions of dead workers after 60.0 s (61 failed attempts; the last: ECONNREFUSED). Meanwhile this worker takes over no session whose worker died; it keeps trying.',
      'Still cannot look for sessions of dead workers after 2 min 0 s (121 failed attempts; the last: ECONNREFUSED). Meanwhile this worker takes over no session whose worker died; it keeps trying.',
      'Still cannot look for sessions of dead workers after 4 min 0 s (241 failed attempts; the last: ECONNREFUSED). Meanwhile this worker takes over no session whose worker died; it keeps trying.',
      'Looking for sessions of dead workers again after 4 min 31 s (271 failed attempts): this worker takes them over again.',
    ]);
    // Working again: nothing more, no reminder pending.
    await vi.advanceTimersByTimeAsync(30 * 60_000);
    expect(lines).toHaveLength(6);
    await watch.stop();
  });

  it('a second outage is told like the first, with its own count; stopped mid-outage, no reminder follows', async () => {
    vi.useFakeTimers();
    const { state, lines, watch } = failingWatch();
    // The look at start works; those at 1 and 2 s fail, the one at 3 s works.
    state.failure = new Error('one');
    await vi.advanceTimersByTimeAsync(2500);
    state.failure = null;
    await vi.advanceTimersByTimeAsync(1000);
    state.failure = new Error('two');
    await vi.advanceTimersByTimeAsync(1000);
    expect(lines).toEqual([
      { event: 'takeover-failed', message: 'one' },
      { event: 'takeover-recovered', failedMs: 2000, attempts: 2 },
      { event: 'takeover-failed', message: 'two' },
    ]);
    await watch.stop();
    const looks = state.looks;
    await vi.advanceTimersByTimeAsync(60 * 60_000);
    expect(lines).toHaveLength(3);
    expect(state.looks).toBe(looks);
  });
});
