import type { WorkflowState } from '../../src/authoring.ts';
import { money } from './data.ts';

/** A refund as the bookstore records it: one per order, ever. */
export interface Refund {
  orderId: number;
  amount: number;
  note: string;
  run: string;
  approvedBy: string;
  issuedAt: string;
  /** The delivery that issued it: the same delivery run again after a crash gets the same answer. */
  key: string;
}

export type RefundOutcome = { issued: true; refund: Refund } | { issued: false; refund: Refund };

/**
 * Issues a refund unless the order already has one. The record is created with the store's
 * insert-if-absent, so two processes (a retried superstep, two branches of one run, two
 * runs for one order) can never both issue it: the loser is told about the first refund.
 */
export async function issueRefund(state: WorkflowState, refund: Refund): Promise<RefundOutcome> {
  const claim = await state.claim(`refund:${refund.orderId}`, { ...refund });
  return claim.won ? { issued: true, refund } : { issued: false, refund: claim.value as unknown as Refund };
}

export async function findRefund(state: WorkflowState, orderId: number): Promise<Refund | undefined> {
  return (await state.get(`refund:${orderId}`)) as unknown as Refund | undefined;
}

export function describeRefund(refund: Refund): string {
  return `${money(refund.amount)} for order ${refund.orderId}`;
}
