import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { formatOwner } from '../liveness/lease-owner.ts';
import type { Liveness } from '../liveness/liveness.ts';
import { localLiveness } from '../liveness/local/local-liveness.ts';
import type { ContinuationJob, ContinuationQueue } from '../queue/continuation-queue.ts';
import type { LeaseInfo } from '../store/store.ts';
import { takeOverDeadHolders } from './worker-takeover.ts';

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
