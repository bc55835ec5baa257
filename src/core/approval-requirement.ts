import type { ApprovalRequirement } from './approval.ts';
import { ConfigError } from './errors/config-error.ts';

/**
 * What a tool's approval policy may answer for one call: no approval (`false`), one approver
 * (`true`), or a requirement — a role and how many distinct approvers (a quorum).
 */
export type PolicyAnswer = boolean | { role?: string | null; approvals?: number };

/**
 * The requirement a policy's answer stands for, or null when no person need approve.
 * `defaultRole` is the tool's `role`, used when the answer names none.
 */
export function requirementOf(
  answer: PolicyAnswer,
  defaultRole: string | null,
  tool: string,
): ApprovalRequirement | null {
  if (answer === false) return null;
  if (answer === true) return { role: defaultRole, approvals: 1 };
  const approvals = answer.approvals ?? 1;
  if (!Number.isInteger(approvals) || approvals < 1 || approvals > 10) {
    throw new ConfigError(
      `The approval policy of tool ${tool} asked for ${String(answer.approvals)} approvals; it must be a whole number from 1 to 10.`,
    );
  }
  const role = answer.role === undefined ? defaultRole : answer.role;
  if (role !== null && (typeof role !== 'string' || role.trim() === '')) {
    throw new ConfigError(`The approval policy of tool ${tool} named an empty role.`);
  }
  return { role, approvals };
}

/** Whether `next` asks for something `current` did not: another role, or more approvers. */
export function isStricter(next: ApprovalRequirement, current: ApprovalRequirement): boolean {
  return (next.role !== null && next.role !== current.role) || next.approvals > current.approvals;
}
