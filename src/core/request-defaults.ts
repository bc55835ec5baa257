import type { ApprovalRequest } from './approval.ts';
import { effectHashOf } from './check-binding.ts';

/** The fields a request starts with besides its call: effect bound, no approvals yet. */
export type WaitingFields = Pick<
  ApprovalRequest,
  'effectHash' | 'editable' | 'approvalsNeeded' | 'approvals' | 'edit' | 'revision'
>;

/**
 * A new request's binding of its effect and its quorum state, written once for both kinds:
 * `editable` fields a person may change, `approvalsNeeded` distinct approvers (1 unless the
 * policy asks for more).
 */
export function waitingFields(
  effect: string,
  routing: { editable?: readonly string[]; approvalsNeeded?: number } = {},
): WaitingFields {
  return {
    effectHash: effectHashOf(effect),
    editable: [...(routing.editable ?? [])],
    approvalsNeeded: routing.approvalsNeeded ?? 1,
    approvals: [],
    edit: null,
    revision: 0,
  };
}

/** The same fields for a row read from a store written before they existed. */
export const LEGACY_WAITING_FIELDS: WaitingFields = {
  effectHash: null,
  editable: [],
  approvalsNeeded: 1,
  approvals: [],
  edit: null,
  revision: 0,
};
