import { describe, expect, it } from 'vitest';
import { parseRetention, type RetentionPolicy, retentionCutoffs } from '../src/core/retention.ts';
import { purge } from '../src/erasure/purge.ts';
import { serverConfigFromEnv } from '../src/server/server-config.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { runCli, tempStore } from './helpers/cli.ts';
import { testServer } from './server/helpers.ts';

/*
 * A retention period's cutoff is now minus the period, a stored time compared as text
 * (core/instant.ts): it must fall in the years 0000 to 9999. A longer period (3000y, or
 * 300 million years, past what a Date can hold) is refused where it is configured,
 * INVALID_INPUT naming the option with the longest allowed, and purge itself never fails
 * with an untyped RangeError on one.
 */

const YEAR = 365 * 86_400_000;
const NOW = new Date('2026-06-01T00:00:00.000Z');

const refusal = (option: string) =>
  expect.objectContaining({
    code: 'INVALID_INPUT',
    message: expect.stringContaining(option),
    hint: expect.stringMatching(/at most about \d+ years.*leave the kind out/s),
  });

describe('a retention period whose cutoff would fall before the year 0000 is refused', () => {
  it('COUNTERSIGN_RETENTION, parsed (CLI purge and serve read it this way)', () => {
    for (const period of ['300000000y', '3000y', '1000000d']) {
      expect(() => parseRetention(`sessions=90d,audit=${period}`, undefined, NOW)).toThrow(
        refusal('COUNTERSIGN_RETENTION audit'),
      );
    }
    expect(parseRetention('sessions=90d,audit=7y', undefined, NOW)).toEqual({
      sessions: 90 * 86_400_000,
      audit: 7 * YEAR,
    });
    // The longest that fits: its cutoff is still in the year 0000.
    expect(parseRetention('audit=2026y', undefined, NOW).audit).toBe(2026 * YEAR);
  });

  it("serve's configuration from the environment", () => {
    expect(() => serverConfigFromEnv({ COUNTERSIGN_RETENTION: 'audit=300000000y' })).toThrow(
      refusal('COUNTERSIGN_RETENTION audit'),
    );
  });

  it('purge and retentionCutoffs, given a policy in milliseconds: typed, never a RangeError', async () => {
    const store = createMemoryStore();
    for (const period of [300_000_000 * YEAR, 3000 * YEAR, Number.MAX_VALUE]) {
      const policy: RetentionPolicy = { audit: period };
      expect(() => retentionCutoffs(policy, NOW)).toThrow(refusal('retention period of audit'));
      await expect(purge(store, { policy, now: NOW })).rejects.toEqual(refusal('retention period of audit'));
      await expect(purge(store, { policy, now: NOW, dryRun: true })).rejects.toEqual(
        refusal('retention period of audit'),
      );
    }
    // Not a period at all: a NaN cutoff would crash too, a negative one would purge the future.
    for (const period of [Number.NaN, -1, 0, Number.POSITIVE_INFINITY]) {
      await expect(purge(store, { policy: { sessions: period }, now: NOW })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining('retention period of sessions'),
      });
    }
    const report = await purge(store, { policy: { audit: 7 * YEAR }, now: NOW });
    expect(report.cutoffs.audit).toBe('2019-06-03T00:00:00.000Z');
  });

  it('createServer({ retention }) refuses it when the server is created, not at the first pass', () => {
    expect(() =>
      testServer({ retention: { policy: { requests: 300_000_000 * YEAR }, intervalMs: 0 } }),
    ).toThrow(refusal('retention.policy.requests'));
  });

  it('countersign purge with such a COUNTERSIGN_RETENTION', async () => {
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_RETENTION: 'audit=300000000y' };
    const run = await runCli(['purge', '--json'], env);
    expect(run.code).not.toBe(0);
    expect((run.json as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('COUNTERSIGN_RETENTION audit'),
    });
    expect(run.stderr).not.toMatch(/RangeError/);
  });
});
