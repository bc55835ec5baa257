import { toApprovalView } from '../agent/views.ts';
import type { ApprovalRequest } from '../core/approval.ts';
import { parseDuration } from '../core/duration.ts';
import { storeNow } from '../liveness/store-clock.ts';
import type { Command } from './command-input.ts';
import type { CliContext } from './context.ts';
import { decider } from './decider.ts';
import { formatApproval } from './format.ts';

/*
 * `claim` and `release`: the request desk's claims (src/requests/claims.ts), as the API's.
 * The CLI is trusted with roles (as for approve), so only the raiser and the customer are
 * refused here; the server checks roles too.
 */

/** The request as shown after a claim: judged on the clock claims run on (storeNow), as the API's. */
async function claimView(context: CliContext, request: ApprovalRequest) {
  return toApprovalView(request, new Date(await storeNow(await context.store())).toISOString());
}

export const claim: Command = async ({ args, values, context, out }) => {
  const forMs = values.for === undefined ? undefined : parseDuration(values.for, '--for');
  const request = await (await context.requestDesk()).claim(
    args[0]!,
    { by: decider(values) },
    forMs === undefined ? {} : { forMs },
  );
  const view = await claimView(context, request);
  if (out.json) out.data(view);
  else out.print(`Claimed ${view.id} until ${view.claim?.until ?? '-'}.\n${formatApproval(view)}`);
  return 0;
};

export const release: Command = async ({ args, values, context, out }) => {
  const request = await (await context.requestDesk()).release(args[0]!, { by: decider(values) });
  const view = await claimView(context, request);
  if (out.json) out.data(view);
  else out.print(`Released ${view.id}: nobody holds it.`);
  return 0;
};
