import { z } from 'zod';
import {
  executeRefund,
  managerApproval as managerApprovalV1,
  managerDecision,
  prepareRefund,
  prepare as prepareV1,
  refundCase,
} from '../../examples/bookstore/refund-workflow.ts';
import { defineWorkflow } from '../../src/workflow/define-workflow.ts';
import { executor } from '../../src/workflow/executor.ts';
import { requestPort } from '../../src/workflow/request-port.ts';

/**
 * Later versions of the refund workflow, as a team would ship them, for the tests that
 * resume the version-1 checkpoints in test/fixtures/refund-v1/.
 */

/** v2: the case gains an optional currency. Compatible: v1 checkpoints resume as they are. */
export function refundV2() {
  const caseV2 = refundCase.extend({ currency: z.string().optional() });
  const prepare = executor({
    id: 'prepare',
    input: z.number().int().positive(),
    output: caseV2,
    handle: async (orderId, ctx) => ({ ...(await prepareRefund(ctx, orderId)), currency: 'EUR' }),
  });
  const approval = requestPort('manager-approval', { request: caseV2, response: managerDecision });
  const execute = executor({
    id: 'execute',
    input: managerDecision,
    output: z.string(),
    handle: async (decision, ctx) => {
      const refund = approval.requestOf(ctx);
      const text = await executeRefund(ctx, refund, decision);
      return refund.currency ? `${text} (${refund.currency})` : text;
    },
  });
  return defineWorkflow({ name: 'refund', version: 2, stateNamespace: 'bookstore' })
    .start(prepare)
    .edge(prepare, approval)
    .edge(approval, execute)
    .output(execute)
    .build();
}

/** v3, incompatible: `execute` was renamed `issue`. */
export function refundRenamedExecutor() {
  const issue = executor({
    id: 'issue',
    input: managerDecision,
    output: z.string(),
    handle: (decision, ctx) => executeRefund(ctx, managerApprovalV1.requestOf(ctx), decision),
  });
  return defineWorkflow({ name: 'refund', version: 3, stateNamespace: 'bookstore' })
    .start(prepareV1)
    .edge(prepareV1, managerApprovalV1)
    .edge(managerApprovalV1, issue)
    .output(issue)
    .build();
}

const caseInCents = z.object({
  orderId: z.number().int().positive(),
  amountCents: z.number().int().nonnegative(),
  reason: z.string(),
});

/** v3, incompatible: the case's required `amount` became `amountCents`. Optionally with a migration. */
export function refundInCents(options: { migrate: boolean }) {
  const prepare = executor({
    id: 'prepare',
    input: z.number().int().positive(),
    output: caseInCents,
    handle: async (orderId, ctx) => {
      const { amount, reason } = await prepareRefund(ctx, orderId);
      return { orderId, amountCents: Math.round(amount * 100), reason };
    },
  });
  const approval = requestPort('manager-approval', { request: caseInCents, response: managerDecision });
  const execute = executor({
    id: 'execute',
    input: managerDecision,
    output: z.string(),
    handle: (decision, ctx) => {
      const refund = approval.requestOf(ctx);
      return executeRefund(ctx, { orderId: refund.orderId, amount: refund.amountCents / 100 }, decision);
    },
  });
  const builder = defineWorkflow({ name: 'refund', version: 3, stateNamespace: 'bookstore' })
    .start(prepare)
    .edge(prepare, approval)
    .edge(approval, execute)
    .output(execute);
  if (options.migrate) {
    builder.migration({
      from: 1,
      to: 3,
      upgrade: (state) => ({
        ...state,
        requests: state.requests.map((request) => {
          if (request.port !== 'manager-approval') return request;
          const { amount, ...rest } = request.data as { amount: number; orderId: number; reason: string };
          return { ...request, data: { ...rest, amountCents: Math.round(amount * 100) } };
        }),
      }),
    });
  }
  return builder.build();
}
