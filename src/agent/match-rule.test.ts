import { describe, expect, it } from 'vitest';
import type { StandingRule } from '../store/store.ts';
import {
  autoRuleApproval,
  matchStandingRule,
  nextAutoApprovedSteps,
  rulesMayApprove,
  standingRuleApproval,
} from './match-rule.ts';

const rule = (overrides: Partial<StandingRule> & { id: string }): StandingRule => ({
  session: 's1',
  tool: 'cancel_order',
  toolIdentity: 'cancel_order@aaaa',
  argsHash: null,
  sourceRequest: 'apr_1',
  createdAt: '2026-01-01T00:00:00.000Z',
  createdBy: 'alice',
  revokedAt: null,
  revokedBy: null,
  ...overrides,
});

describe('rule matching (no store)', () => {
  it('matches on tool identity, with any arguments or exactly these; the oldest match wins', () => {
    const rules = [
      rule({ id: 'exact', argsHash: 'h1' }),
      rule({ id: 'any' }),
      rule({ id: 'other-tool', toolIdentity: 'cancel_order@bbbb' }),
    ];
    expect(matchStandingRule(rules, { toolIdentity: 'cancel_order@aaaa', argsHash: 'h1' })?.id).toBe('exact');
    expect(matchStandingRule(rules, { toolIdentity: 'cancel_order@aaaa', argsHash: 'h2' })?.id).toBe('any');
    // Same name, other description or schema: another tool, never covered.
    expect(
      matchStandingRule(rules.slice(0, 1), { toolIdentity: 'cancel_order@bbbb', argsHash: 'h1' }),
    ).toBeUndefined();
    expect(
      matchStandingRule([rule({ id: 'gone', revokedAt: '2026-01-02T00:00:00.000Z' })], {
        toolIdentity: 'cancel_order@aaaa',
        argsHash: 'h1',
      }),
    ).toBeUndefined();
  });

  it('names the approval for the audit trail', () => {
    expect(standingRuleApproval(rule({ id: 'r1' }))).toEqual({
      by: 'rule:r1',
      kind: 'standing-rule',
      reason: 'Standing approval for this session by alice.',
    });
    expect(standingRuleApproval(rule({ id: 'r2', argsHash: 'h' })).reason).toBe(
      'Standing approval with these arguments by alice.',
    );
    expect(autoRuleApproval('milk')).toEqual({
      by: 'auto:milk',
      kind: 'auto-rule',
      reason: 'Approved by the rule "milk".',
    });
  });

  it('no rule applies to a tool that wants every call seen, nor past the cap of rule-approved steps', () => {
    expect(rulesMayApprove({ standing: true }, 0, 40)).toBe(true);
    expect(rulesMayApprove({ standing: false }, 0, 40)).toBe(false);
    expect(rulesMayApprove({ standing: true }, 40, 40)).toBe(false);
  });

  it('the cap counts steps in a row approved by rules; a person resets it', () => {
    expect(nextAutoApprovedSteps(3, { askedPerson: false, autoApproved: true })).toBe(4);
    expect(nextAutoApprovedSteps(3, { askedPerson: true, autoApproved: true })).toBe(0);
    expect(nextAutoApprovedSteps(3, { askedPerson: false, autoApproved: false })).toBe(3);
  });
});
