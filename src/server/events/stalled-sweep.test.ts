import { describe, expect, it } from 'vitest';
import type { StalledSession, Store } from '../../store/store.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import { createStalledSweep, STALLED_MAX_BACKOFF_MS, stalledRetryDelay } from './stalled-sweep.ts';

const GRACE = 10_000;

/** A store that lists `ids` as stalled (no lease) until continued, and an agent whose resume does what `resume` says. */
function sweepOf(ids: string[], resume: (id: string) => Promise<{ status: string }>) {
  const store = {
    listStalledSessions: async () =>
      ids.map(
        (id): StalledSession => ({ id, agent: 'desk', lease: { owner: null, untilMs: 0 } }) as StalledSession,
      ),
  } as unknown as Store;
  const tries: Array<[string, number]> = [];
  const logs: string[] = [];
  let now = 0;
  const agents = {
    all: [{ name: 'desk' }],
    get: () => ({
      resume: (id: string) => {
        tries.push([id, now / 1000]);
        // Continued: the store no longer lists it.
        return resume(id).then((turn) => {
          ids.splice(ids.indexOf(id), 1);
          return turn;
        });
      },
    }),
  } as unknown as AgentRegistry;
  const sweep = createStalledSweep({ store, agents, graceMs: GRACE, log: (line) => logs.push(line) });
  /** Passes every 2 s from the last to `seconds`, as the watcher runs them while a session is flagged. */
  const runUntil = async (seconds: number) => {
    for (; now <= seconds * 1000; now += 2000) await sweep(now);
  };
  return { tries, logs, runUntil };
}

describe('the stalled-session sweep', () => {
  it('tries a session that cannot be continued ever less often: the grace, then doubling up to the cap', async () => {
    const { tries, logs, runUntil } = sweepOf(['broken'], async () => {
      throw new Error('the row no longer reads');
    });
    await runUntil(200);
    // Seen at 0, tried after its grace; then 20, 40, 80 s later (each pass is 2 s apart).
    expect(tries.map(([, at]) => at)).toEqual([10, 30, 70, 150]);
    expect(logs[0]).toBe(
      'countersign: could not continue stalled session broken (1 try; next in 20 s): Error: the row no longer reads',
    );
    expect(logs[3]).toContain('(4 tries in a row; next in 160 s)');
    expect(stalledRetryDelay(20, GRACE, STALLED_MAX_BACKOFF_MS)).toBe(STALLED_MAX_BACKOFF_MS);
  });

  it('forgets the failures once it is continued, and leaves the other sessions to their grace', async () => {
    let fixed = false;
    const { tries, logs, runUntil } = sweepOf(['flaky', 'fine'], async (id) => {
      if (id === 'flaky' && !fixed) throw new Error('tool down');
      return { status: 'completed' };
    });
    await runUntil(10);
    fixed = true;
    await runUntil(40);
    expect(tries).toEqual([
      ['flaky', 10],
      ['fine', 10],
      ['flaky', 30],
    ]);
    expect(logs).toEqual([
      'countersign: could not continue stalled session flaky (1 try; next in 20 s): Error: tool down',
      'countersign: continued stalled session fine: completed',
      'countersign: continued stalled session flaky: completed',
    ]);
  });
});
