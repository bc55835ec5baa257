import { z } from 'zod';
import {
  defineWorkflow,
  type ExecutorContext,
  executor,
  NotFoundError,
  requestPort,
} from '../../src/authoring.ts';
import { money, orderTotal } from './data.ts';
import { loadOrder } from './orders.ts';
import { describeRefund, issueRefund } from './refunds.ts';

/**
 * The refund workflow: `prepare` computes the refund from the order, the run waits at
 * `manager-approval` for a person (for as long as it takes, in no process at all), and
 * `execute` issues it — once per order, however often it is asked.
 *
 * Executor and port ids and these schemas are the contract stored checkpoints are read
 * against: change them compatibly (add optional fields) or bump `version` and register a
 * migration. Checkpoints written by version 1 are kept in test/fixtures/refund-v1/.
 */
export const refundCase = z.object({
  orderId: z.number().int().positive(),
  amount: z.number().nonnegative(),
  reason: z.string(),
});
export type RefundCase = z.infer<typeof refundCase>;

export const managerDecision = z.object({ approved: z.boolean(), note: z.string() });
export type ManagerDecision = z.infer<typeof managerDecision>;

export const REFUND_REASON = 'Damaged cover reported by customer';

/** Order → refund case, from the books on the order (1040 → 35.00). */
export async function prepareRefund(ctx: ExecutorContext, orderId: number): Promise<RefundCase> {
  const order = await loadOrder(ctx.state, orderId);
  if (order === undefined) {
    throw new NotFoundError(`There is no order ${orderId} to refund.`);
  }
  return { orderId, amount: Math.round(orderTotal(order) * 100) / 100, reason: REFUND_REASON };
}

/** Applies the manager's decision to the case: issues the refund, or says why not. */
export async function executeRefund(
  ctx: ExecutorContext,
  refund: { orderId: number; amount: number },
  decision: ManagerDecision,
): Promise<string> {
  if (!decision.approved) {
    return `Refund declined for order ${refund.orderId} (${money(refund.amount)}). Manager note: ${decision.note}`;
  }
  const outcome = await issueRefund(ctx.state, {
    orderId: refund.orderId,
    amount: refund.amount,
    note: decision.note,
    run: ctx.run,
    approvedBy: ctx.answered?.by ?? 'unknown',
    issuedAt: new Date().toISOString(),
    key: ctx.idempotencyKey,
  });
  if (!outcome.issued && outcome.refund.key !== ctx.idempotencyKey) {
    return `Refund issued already: ${describeRefund(outcome.refund)} by run ${outcome.refund.run} at ${outcome.refund.issuedAt}; nothing was refunded again. Manager note: ${decision.note}`;
  }
  return `Refund issued: ${describeRefund(outcome.refund)}. Manager note: ${decision.note}`;
}

export const prepare = executor({
  id: 'prepare',
  input: z.number().int().positive(),
  output: refundCase,
  handle: (orderId, ctx) => prepareRefund(ctx, orderId),
});

export const managerApproval = requestPort('manager-approval', {
  request: refundCase,
  response: managerDecision,
  // Money leaves the shop: only a manager may answer.
  role: 'manager',
  // A refund left waiting half a working day reminds the managers (request.reminder).
  remindAfter: '4h',
  // What the inbox and `countersign show` say answering does, and for whom.
  effect: (refund, { customer }) =>
    `Approving refunds ${money(refund.amount)} on order ${refund.orderId}${customer ? ` to customer ${customer}` : ''}; declining refunds nothing.`,
});

export const execute = executor({
  id: 'execute',
  input: managerDecision,
  output: z.string(),
  handle: (decision, ctx) => executeRefund(ctx, managerApproval.requestOf(ctx), decision),
});

export const refundWorkflow = defineWorkflow({ name: 'refund', version: 1, stateNamespace: 'bookstore' })
  .start(prepare)
  .edge(prepare, managerApproval)
  .edge(managerApproval, execute)
  .output(execute)
  .build();
