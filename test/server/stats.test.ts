import { describe, expect, it } from 'vitest';
import { requestStats, statsWindow } from '../../src/requests/request-stats.ts';
import { byPerson, leasedSession, raise, request } from '../../src/store/conformance/fixtures.ts';
import { testServer } from './helpers.ts';

describe('GET /v1/stats', () => {
  async function seeded() {
    const server = testServer();
    await leasedSession(server.store, 's1');
    const now = Date.now();
    const iso = (offset: number) => new Date(now + offset).toISOString();
    await raise(server.store, 's1', [
      request({
        id: 'r1',
        session: 's1',
        createdAt: iso(-60_000),
        expiresAt: iso(3_600_000),
        tool: 'refund',
      }),
      request({
        id: 'r2',
        session: 's1',
        createdAt: iso(-60_000),
        expiresAt: iso(3_600_000),
        tool: 'refund',
      }),
      request({ id: 'old', session: 's1', createdAt: iso(-10 * 86_400_000), expiresAt: iso(3_600_000) }),
    ]);
    await server.store.decide('r1', { ...byPerson('approved', 0, 'mia'), at: iso(-30_000) });
    await server.store.decide('r2', {
      ...byPerson('rejected', 0, 'alice'),
      reason: 'Too much',
      at: iso(-50_000),
    });
    await server.store.decide('old', { ...byPerson('approved', 0, 'mia'), at: iso(-9 * 86_400_000) });
    return server;
  }

  it('serves the last seven days by default, the same numbers requestStats computes', async () => {
    const server = await seeded();
    const response = await server.call('GET', '/v1/stats', { as: 'alice' });
    expect(response.status).toBe(200);
    expect(response.json.decided).toEqual({ approved: 1, rejected: 1, answered: 0, expired: 0 });
    expect(response.json.timeToDecision).toEqual([
      { kind: 'tool-call', tool: 'refund', role: null, decisions: 2, p50Ms: 10_000, p90Ms: 30_000 },
    ]);
    expect(response.json.rejections.reasons).toEqual([{ reason: 'Too much', count: 1 }]);
    expect(response.json.approvers.map((row: { approver: string }) => row.approver)).toEqual([
      'alice',
      'mia',
    ]);
    const direct = await requestStats(
      server.store,
      { since: response.json.since, until: response.json.until },
      new Date(),
    );
    expect(direct).toEqual(response.json);
  });

  it('takes since as a duration or an instant; a bad window is 400 INVALID_INPUT', async () => {
    const server = await seeded();
    const month = await server.call('GET', '/v1/stats?since=30d', { as: 'alice' });
    expect(month.json.decided.approved).toBe(2);
    const instant = await server.call(
      'GET',
      `/v1/stats?since=${encodeURIComponent(new Date(Date.now() - 40_000).toISOString())}`,
      {
        as: 'alice',
      },
    );
    expect(instant.json.decided).toEqual({ approved: 1, rejected: 0, answered: 0, expired: 0 });
    for (const query of ['since=lately', 'since=1h&until=2h', 'until=soonish']) {
      const bad = await server.call('GET', `/v1/stats?${query}`, { as: 'alice' });
      expect(bad.status, query).toBe(400);
      expect(bad.json.error.code, query).toBe('INVALID_INPUT');
    }
    expect((await server.call('GET', '/v1/stats')).status).toBe(401);
  });

  it('statsWindow: durations count back from now, until defaults to now', () => {
    const now = new Date('2026-12-01T12:00:00.000Z');
    expect(statsWindow({}, now)).toEqual({
      since: '2026-11-24T12:00:00.000Z',
      until: '2026-12-01T12:00:00.000Z',
    });
    expect(statsWindow({ since: '24h', until: '1h' }, now)).toEqual({
      since: '2026-11-30T12:00:00.000Z',
      until: '2026-12-01T11:00:00.000Z',
    });
    // Every unit a duration takes elsewhere (parseDuration), weeks and years included.
    expect(statsWindow({ since: '2w' }, now).since).toBe('2026-11-17T12:00:00.000Z');
    expect(statsWindow({ since: '1y' }, now).since).toBe('2025-12-01T12:00:00.000Z');
    // A bare number is neither a time nor a duration here.
    expect(() => statsWindow({ since: '5' }, now)).toThrow(/not an ISO-8601 instant/);
  });
});
