import { expect } from 'vitest';
import type { Decision } from '../../core/approval.ts';
import { at, byPerson, type ConformanceContext, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

export function statsCases(ctx: ConformanceContext): void {
  describe('decisionStats', () => {
    // Raised at 0; decided after 10, 20, 30, 40 and 100 s by people, one expired, one moved on,
    // one decided outside the window, one still waiting.
    async function decided() {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const rows = [
        request({ id: 'a', session: 's1', createdAt: at(0), tool: 'refund', requiredRole: 'manager' }),
        request({ id: 'b', session: 's1', createdAt: at(0), tool: 'refund', requiredRole: 'manager' }),
        request({ id: 'c', session: 's1', createdAt: at(0), tool: 'refund', requiredRole: 'manager' }),
        request({ id: 'd', session: 's1', createdAt: at(0) }),
        request({ id: 'e', session: 's1', createdAt: at(0), expiresAt: at(500) }),
        request({ id: 'f', session: 's1', createdAt: at(0), expiresAt: at(50) }),
        request({ id: 'g', session: 's1', createdAt: at(0) }),
        request({ id: 'h', session: 's1', createdAt: at(0), expiresAt: at(6000) }),
        request({ id: 'w', session: 's1', createdAt: at(0) }),
      ];
      await raise(store, 's1', rows);
      const rejected = (seconds: number, by: string, reason: string): Decision => ({
        ...byPerson('rejected', seconds, by),
        reason,
      });
      await store.decide('a', byPerson('approved', 10, 'mia'));
      await store.decide('b', rejected(20, 'mia', 'Over the limit'));
      await store.decide('c', byPerson('approved', 30, 'alice'));
      await store.decide('d', rejected(40, 'alice', 'Over the limit'));
      await store.decide('e', rejected(100, 'alice', 'Wrong order'));
      await store.decide('f', {
        verdict: 'expired',
        by: 'countersign',
        reason: 'x',
        at: at(60),
        kind: 'expiry',
      });
      await store.decide('g', {
        verdict: 'rejected',
        by: 'countersign',
        reason: 'moved on',
        at: at(70),
        kind: 'moved-on',
      });
      await store.decide('h', byPerson('approved', 5000, 'alice'));
      return store;
    }

    it('counts the window: time to decision by tool and role, rejections and reasons, expiries, approvers', async () => {
      const store = await decided();
      const stats = await store.decisionStats({ since: at(0), until: at(1000) });
      expect(stats).toEqual({
        since: at(0),
        until: at(1000),
        decided: { approved: 2, rejected: 4, answered: 0, expired: 1 },
        timeToDecision: [
          { kind: 'tool-call', tool: 'refund', role: 'manager', decisions: 3, p50Ms: 20_000, p90Ms: 30_000 },
          { kind: 'tool-call', tool: 'place_order', role: null, decisions: 2, p50Ms: 40_000, p90Ms: 100_000 },
        ],
        rejections: {
          total: 4,
          byKind: [
            { kind: 'person', count: 3 },
            { kind: 'moved-on', count: 1 },
          ],
          reasons: [
            { reason: 'Over the limit', count: 2 },
            { reason: 'Wrong order', count: 1 },
          ],
          reasonsFrom: 3,
        },
        expiries: { total: 1, byTool: [{ kind: 'tool-call', tool: 'place_order', count: 1 }] },
        approvers: [
          { approver: 'alice', approved: 1, rejected: 2, answered: 0 },
          { approver: 'mia', approved: 1, rejected: 1, answered: 0 },
        ],
      });
    });

    it('the window is since inclusive, until exclusive; an empty window is all zeros', async () => {
      const store = await decided();
      const narrow = await store.decisionStats({ since: at(20), until: at(40) });
      expect(narrow.decided).toEqual({ approved: 1, rejected: 1, answered: 0, expired: 0 });
      const empty = await store.decisionStats({ since: at(6000), until: at(7000) });
      expect(empty).toMatchObject({
        decided: { approved: 0, rejected: 0, answered: 0, expired: 0 },
        timeToDecision: [],
        approvers: [],
        rejections: { total: 0, reasons: [], reasonsFrom: 0 },
      });
    });

    it('refuses a window that is not two ISO instants in order', async () => {
      const store = ctx.store();
      await expect(store.decisionStats({ since: 'yesterday', until: at(1) })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      await expect(store.decisionStats({ since: at(5), until: at(1) })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    });
  });
}
