import type { Approval, ApprovalRequest, ApprovalRequirement, RequestEdit } from './approval.ts';

/** What one person's approval does to a request: completes it (decide), or is recorded. */
export type ApprovalStep =
  /** The last approval needed: decide `approved`, running `edit` (or the call as proposed). */
  | { kind: 'decide'; approvals: Approval[]; edit: RequestEdit | null; approvalsNeeded: number }
  /** Not the last: recorded with recordApproval's compare-and-set; the request keeps waiting. */
  | {
      kind: 'record';
      approvals: Approval[];
      edit: RequestEdit | null;
      requiredRole: string | null;
      approvalsNeeded: number;
      /** The edit re-routed the request to a role the editor does not hold. */
      rerouted: boolean;
    };

/**
 * The quorum rule, written once. Without an edit, the approval joins those so far; the last
 * one needed decides. An edit restarts the count on the edited call under the requirement
 * the policy gives it (`edited.requirement`): the editor's approval counts when they hold
 * its role; otherwise the request is re-routed and waits for people who do.
 * Distinct approvers are decision-rights.ts's rule, checked before this.
 */
export function approvalStep(
  request: Pick<ApprovalRequest, 'approvals' | 'approvalsNeeded' | 'edit' | 'requiredRole'>,
  approval: Approval,
  edited?: { edit: RequestEdit | null; requirement: ApprovalRequirement; editorQualifies: boolean },
): ApprovalStep {
  if (edited) {
    const approvals = edited.editorQualifies ? [approval] : [];
    const needed = edited.requirement.approvals;
    if (approvals.length >= needed)
      return { kind: 'decide', approvals, edit: edited.edit, approvalsNeeded: needed };
    return {
      kind: 'record',
      approvals,
      edit: edited.edit,
      requiredRole: edited.requirement.role,
      approvalsNeeded: needed,
      rerouted: !edited.editorQualifies,
    };
  }
  const approvals = [...request.approvals, approval];
  if (approvals.length >= request.approvalsNeeded)
    return { kind: 'decide', approvals, edit: request.edit, approvalsNeeded: request.approvalsNeeded };
  return {
    kind: 'record',
    approvals,
    edit: request.edit,
    requiredRole: request.requiredRole,
    approvalsNeeded: request.approvalsNeeded,
    rerouted: false,
  };
}

/** Whether a decider holds a requirement's role (roles null: not known here, so trusted). */
export function holdsRole(roles: readonly string[] | null, role: string | null): boolean {
  return role === null || roles === null || roles.includes(role);
}
