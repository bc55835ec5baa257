import type { StandingRule } from '../store/store.ts';

/** An approval given without a person: who gave it, of which kind, and the words for the trail. */
export interface AutoApproval {
  by: string;
  kind: 'standing-rule' | 'auto-rule';
  reason: string;
}

/**
 * Whether any rule may approve a call of this tool now. `standing: false` means every call
 * is seen by a person; and after `max` model steps in a row approved entirely by rules, a
 * person is asked, so a loop of rule-approved calls cannot run on unseen.
 */
export function rulesMayApprove(
  tool: { standing: boolean },
  autoApprovedSteps: number,
  maxAutoApprovedSteps: number,
): boolean {
  return tool.standing && autoApprovedSteps < maxAutoApprovedSteps;
}

/**
 * The session's standing rule covering this call, if any: the same tool identity (name,
 * description and schema, so a different tool later registered under the name never
 * matches), with any arguments or with exactly these. The first, oldest, match wins.
 */
export function matchStandingRule(
  rules: readonly StandingRule[],
  call: { toolIdentity: string; argsHash: string },
): StandingRule | undefined {
  return rules.find(
    (rule) =>
      rule.revokedAt === null &&
      rule.toolIdentity === call.toolIdentity &&
      (rule.argsHash === null || rule.argsHash === call.argsHash),
  );
}

/** The approval a standing rule gives, named in the audit as `rule:<id>`. */
export function standingRuleApproval(rule: StandingRule): AutoApproval {
  const scope = rule.argsHash ? 'with these arguments' : 'for this session';
  return {
    by: `rule:${rule.id}`,
    kind: 'standing-rule',
    reason: `Standing approval ${scope} by ${rule.createdBy}.`,
  };
}

/** The approval an agent's auto-approval rule gives, named in the audit as `auto:<name>`. */
export function autoRuleApproval(ruleName: string): AutoApproval {
  return { by: `auto:${ruleName}`, kind: 'auto-rule', reason: `Approved by the rule "${ruleName}".` };
}

/**
 * The cap's counter after a model step: a step with a request for a person resets it, a
 * step whose approvals were all given by rules adds one, any other step leaves it.
 */
export function nextAutoApprovedSteps(
  current: number,
  step: { askedPerson: boolean; autoApproved: boolean },
): number {
  if (step.askedPerson) return 0;
  return step.autoApproved ? current + 1 : current;
}
