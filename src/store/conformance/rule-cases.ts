import { expect } from 'vitest';
import type { StandingRule, Store } from '../store.ts';
import { at, byPerson, type ConformanceContext, event, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

function rule(overrides: Partial<StandingRule> & { id: string; sourceRequest: string }): StandingRule {
  return {
    session: 's1',
    tool: 'place_order',
    toolIdentity: 'place_order:3f1c9a',
    argsHash: null,
    createdAt: at(20),
    createdBy: 'alice',
    revokedAt: null,
    revokedBy: null,
    ...overrides,
  };
}

/** Sessions s1 and s2 with pending requests: r1..r3 in s1, r4 in s2. */
async function pendingRequests(store: Store): Promise<void> {
  await leasedSession(store, 's1');
  await leasedSession(store, 's2');
  await raise(store, 's1', [
    request({ id: 'r1', session: 's1' }),
    request({ id: 'r2', session: 's1' }),
    request({ id: 'r3', session: 's1' }),
  ]);
  await raise(store, 's2', [request({ id: 'r4', session: 's2' })]);
}

/** Grants `granted` by approving its source request; fails the test if the grant loses. */
async function grant(store: Store, granted: StandingRule): Promise<void> {
  const result = await store.decide(granted.sourceRequest, byPerson('approved', 20), [], { rule: granted });
  if (!result.won) throw new Error(`test setup: approving ${granted.sourceRequest} lost`);
}

export function ruleCases(ctx: ConformanceContext): void {
  describe('standing rules created by decide', () => {
    it('a winning decision creates its rule along with the decision and its audit events', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      const r1Rule = rule({ id: 'rule-1', sourceRequest: 'r1' });
      const result = await store.decide(
        'r1',
        byPerson('approved', 20),
        [event('request.decided', 's1', 'r1')],
        {
          rule: r1Rule,
        },
      );
      expect(result.won).toBe(true);
      expect(result.request?.status).toBe('approved');
      expect(await store.getRule('rule-1')).toEqual(r1Rule);
      expect(await store.listRules()).toEqual([r1Rule]);
      expect((await store.listAudit()).map((entry) => [entry.kind, entry.requestId])).toEqual([
        ['request.decided', 'r1'],
      ]);
    });

    it('every field round-trips, with argsHash either null or set', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      const r2 = await store.getApproval('r2');
      if (r2 === null) throw new Error('test setup: no r2');
      const anyArgs = rule({ id: 'rule-any', sourceRequest: 'r1', argsHash: null });
      const exactArgs = rule({
        id: 'rule-exact',
        sourceRequest: 'r2',
        tool: 'refund',
        toolIdentity: 'refund:77d0e2',
        argsHash: r2.argsHash,
        createdAt: at(21),
        createdBy: 'bob',
      });
      await grant(store, anyArgs);
      await grant(store, exactArgs);
      expect(await store.getRule('rule-any')).toEqual(anyArgs);
      expect(await store.getRule('rule-exact')).toEqual(exactArgs);
      expect((await store.getRule('rule-any'))?.argsHash).toBeNull();
      expect((await store.getRule('rule-exact'))?.argsHash).toBe(r2.argsHash);
    });

    it('a losing decision creates no rule', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      await store.decide('r1', byPerson('rejected', 19, 'bob'));
      const result = await store.decide(
        'r1',
        byPerson('approved', 20),
        [event('request.decided', 's1', 'r1')],
        {
          rule: rule({ id: 'rule-1', sourceRequest: 'r1' }),
        },
      );
      expect(result.won).toBe(false);
      expect(result.request?.status).toBe('rejected');
      expect(await store.getRule('rule-1')).toBeNull();
      expect(await store.listRules({ includeRevoked: true })).toEqual([]);
      expect(await store.listAudit()).toEqual([]);
    });

    it('of two concurrent decisions with rules, only the winner’s rule exists', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      const results = await Promise.all([
        store.decide('r1', byPerson('approved', 20, 'alice'), [], {
          rule: rule({ id: 'rule-alice', sourceRequest: 'r1', createdBy: 'alice' }),
        }),
        store.decide('r1', byPerson('approved', 20, 'bob'), [], {
          rule: rule({ id: 'rule-bob', sourceRequest: 'r1', createdBy: 'bob' }),
        }),
      ]);
      expect(results.filter((result) => result.won)).toHaveLength(1);
      const winner = (await store.getApproval('r1'))?.decision?.by;
      const rules = await store.listRules({ includeRevoked: true });
      expect(rules.map((stored) => stored.createdBy)).toEqual([winner]);
    });

    it('a rule for another session is refused and the decision is rolled back with it', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      const decide = store.decide('r1', byPerson('approved', 20), [event('request.decided', 's1', 'r1')], {
        rule: rule({ id: 'rule-1', sourceRequest: 'r1', session: 's2' }),
      });
      await expect(decide).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      const r1 = await store.getApproval('r1');
      expect(r1?.status).toBe('pending');
      expect(r1?.decision).toBeNull();
      expect(await store.getRule('rule-1')).toBeNull();
      expect(await store.listAudit()).toEqual([]);
      // Nothing was left half-done: the same request can still be decided properly.
      await grant(store, rule({ id: 'rule-1', sourceRequest: 'r1' }));
      expect((await store.getRule('rule-1'))?.session).toBe('s1');
    });

    it('a rule whose id is taken is refused and the decision is rolled back with it', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      const first = rule({ id: 'rule-1', sourceRequest: 'r1' });
      await grant(store, first);
      const decide = store.decide('r2', byPerson('approved', 21), [event('request.decided', 's1', 'r2')], {
        rule: rule({ id: 'rule-1', sourceRequest: 'r2', createdAt: at(21) }),
      });
      await expect(decide).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect((await store.getApproval('r2'))?.status).toBe('pending');
      expect(await store.getRule('rule-1')).toEqual(first);
      expect(await store.listAudit()).toEqual([]);
    });
  });

  describe('listRules', () => {
    it('filters by session, lists oldest first then by id, and hides revoked rules unless asked', async () => {
      const store = ctx.store();
      await pendingRequests(store);
      await grant(store, rule({ id: 'b', sourceRequest: 'r1', createdAt: at(25) }));
      await grant(store, rule({ id: 'a', sourceRequest: 'r2', createdAt: at(25) }));
      await grant(store, rule({ id: 'c', sourceRequest: 'r3', createdAt: at(22) }));
      await grant(store, rule({ id: 'd', sourceRequest: 'r4', session: 's2', createdAt: at(23) }));
      await store.revokeRule('a', 'alice', at(30));
      const ids = async (filter?: Parameters<Store['listRules']>[0]) =>
        (await store.listRules(filter)).map((stored) => stored.id);
      expect(await ids()).toEqual(['c', 'd', 'b']);
      expect(await ids({ includeRevoked: true })).toEqual(['c', 'd', 'a', 'b']);
      expect(await ids({ session: 's1' })).toEqual(['c', 'b']);
      expect(await ids({ session: 's1', includeRevoked: true })).toEqual(['c', 'a', 'b']);
      expect(await ids({ session: 's2' })).toEqual(['d']);
      expect(await ids({ session: 'nobody', includeRevoked: true })).toEqual([]);
    });
  });

  describe('revokeRule', () => {
    async function granted(store: Store): Promise<StandingRule> {
      await pendingRequests(store);
      const r1Rule = rule({ id: 'rule-1', sourceRequest: 'r1' });
      await grant(store, r1Rule);
      return r1Rule;
    }

    it('the first revocation sets revokedAt and revokedBy and writes its audit events', async () => {
      const store = ctx.store();
      const r1Rule = await granted(store);
      const revoked = { ...r1Rule, revokedAt: at(40), revokedBy: 'carol' };
      expect(await store.revokeRule('rule-1', 'carol', at(40), [event('rule.revoked', 's1')])).toEqual(
        revoked,
      );
      expect(await store.getRule('rule-1')).toEqual(revoked);
      expect((await store.listAudit({ session: 's1' })).map((entry) => [entry.kind, entry.at])).toEqual([
        ['rule.revoked', at(40)],
      ]);
    });

    it('a second revocation returns the rule unchanged and writes no audit entry', async () => {
      const store = ctx.store();
      const r1Rule = await granted(store);
      await store.revokeRule('rule-1', 'carol', at(40), [event('rule.revoked', 's1')]);
      const again = await store.revokeRule('rule-1', 'dave', at(50), [event('rule.revoked', 's1')]);
      const revoked = { ...r1Rule, revokedAt: at(40), revokedBy: 'carol' };
      expect(again).toEqual(revoked);
      expect(await store.getRule('rule-1')).toEqual(revoked);
      expect(await store.listAudit()).toHaveLength(1);
    });

    it('an unknown rule is null and nothing is written', async () => {
      const store = ctx.store();
      await granted(store);
      expect(await store.revokeRule('nope', 'carol', at(40), [event('rule.revoked', 's1')])).toBeNull();
      expect(await store.getRule('nope')).toBeNull();
      expect(await store.listAudit()).toEqual([]);
      expect((await store.getRule('rule-1'))?.revokedAt).toBeNull();
    });
  });

  describe('rules and session transfer', () => {
    it('rules are not exported: an imported session starts with none', async () => {
      const source = ctx.store();
      await pendingRequests(source);
      await grant(source, rule({ id: 'rule-1', sourceRequest: 'r1' }));
      const snapshot = await source.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      expect(Object.keys(snapshot).sort()).toEqual(['approvals', 'executions', 'messages', 'session']);
      const { store: target, cleanup } = await ctx.fresh();
      try {
        await target.importSession(snapshot);
        expect((await target.getApproval('r1'))?.status).toBe('approved');
        expect(await target.listRules({ includeRevoked: true })).toEqual([]);
        expect(await target.getRule('rule-1')).toBeNull();
      } finally {
        await target.close();
        await cleanup();
      }
    });
  });
}
