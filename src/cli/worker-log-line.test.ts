import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { workerLogLine } from './worker-log-line.ts';

describe('workerLogLine', () => {
  it('tells the liveness lock lost, still lost and held again, as the worker', () => {
    const token = 'pg2a';
    expect(
      workerLogLine({ event: 'liveness', held: false, token, reason: 'the connection was closed' }),
    ).toBe(
      'Lost the liveness lock (the connection was closed); holding it again. Meanwhile other hosts may take over the sessions this worker runs.',
    );
    expect(
      workerLogLine({
        event: 'liveness',
        held: false,
        still: true,
        token,
        lostMs: 61_500,
        attempts: 290,
        reason: 'connect ECONNREFUSED 127.0.0.1:5432',
      }),
    ).toBe(
      'Still not holding the liveness lock after 61.5 s (290 failed attempts; the last: connect ECONNREFUSED 127.0.0.1:5432). Meanwhile other hosts may take over the sessions this worker runs.',
    );
    expect(workerLogLine({ event: 'liveness', held: true, token, lostMs: 62, attempts: 0 })).toBe(
      'Holding the liveness lock again after 62 ms: other hosts see this worker alive.',
    );
  });

  it('has words for every event the worker logs: none is printed as raw JSON', () => {
    // Every file whose events reach the worker's log.
    const sources = [
      'worker-command.ts',
      'worker-stalled-sweep.ts',
      'worker-takeover.ts',
      '../liveness/liveness-log.ts',
    ].map((file) => readFileSync(new URL(file, import.meta.url), 'utf8'));
    const kinds = new Set(
      sources.flatMap((text) => [...text.matchAll(/event: '([a-z-]+)'/g)].map((m) => m[1]!)),
    );
    expect([...kinds].sort()).toEqual([
      'continued',
      'liveness',
      'ready',
      'retry',
      'skipped',
      'stalled',
      'stopping',
      'sweep-failed',
      'sweep-recovered',
      'taken-over',
      'takeover-failed',
      'takeover-recovered',
    ]);
    for (const event of kinds) expect(workerLogLine({ event }), event).not.toMatch(/^\{/);
    expect(workerLogLine({ event: 'something-new', n: 1 })).toBe('{"event":"something-new","n":1}');
  });
});
