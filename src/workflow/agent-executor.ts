import { z } from 'zod';
import type { Agent } from '../agent/create-agent.ts';
import type { TurnResult } from '../agent/views.ts';
import { sha256Hex } from '../core/canonical-json.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { OutcomeUnknownError } from '../core/errors/outcome-unknown-error.ts';
import { jsonValue } from '../core/json-schema.ts';
import { type Executor, executor } from './executor.ts';
import type { ExecutorContext } from './executor-context.ts';
import { type RequestPort, requestPort } from './request-port.ts';

/** What a person sees when an agent inside a workflow wants a tool call approved. */
export const approvalAskSchema = z.object({
  /** The agent's approval request id: the call that runs is the one stored under it. */
  approval: z.string(),
  session: z.string(),
  tool: z.string(),
  args: jsonValue,
  argsHash: z.string(),
  effect: z.string(),
  expiresAt: z.string(),
});
export type ApprovalAsk = z.infer<typeof approvalAskSchema>;

export const approvalAnswerSchema = z.object({ approved: z.boolean(), reason: z.string().optional() });
export type ApprovalAnswer = z.infer<typeof approvalAnswerSchema>;

export const agentReplySchema = z.object({ session: z.string(), reply: z.string().nullable() });
export type AgentReply = z.infer<typeof agentReplySchema>;

const agentStateSchema = z.object({
  session: z.string(),
  asked: z.array(z.string()),
  /** The customer the turn was for (added later; older states have none). */
  customer: z.string().nullable().optional(),
});
export type AgentExecutorState = z.infer<typeof agentStateSchema>;

export interface AgentExecutorOptions<I> {
  id: string;
  agent: Agent;
  input: z.ZodType<I>;
  /** The user message (and the signed-in principal) an input becomes. */
  prompt: (input: I) => { text: string; principal?: string | null };
  /** Id of the port its approvals are asked on (default "approval"). */
  port?: string;
}

export type AgentExecutor<I> = Executor<I, AgentReply, AgentExecutorState> & {
  readonly approvals: RequestPort<ApprovalAsk, ApprovalAnswer>;
  /** The agent it runs: the runner decides the run's tool calls with it (`runner.answer`). */
  readonly agent: Agent;
};

/** Whether a workflow node is an agentExecutor (the runner decides its calls with its agent). */
export function isAgentExecutor(node: unknown): node is AgentExecutor<unknown> {
  return (
    typeof node === 'object' &&
    node !== null &&
    (node as { kind?: unknown }).kind === 'executor' &&
    typeof (node as { agent?: { decide?: unknown } }).agent?.decide === 'function'
  );
}

/**
 * An executor that runs an agent turn on a session derived from the run. When the agent
 * stops for approval, each waiting call becomes a request of the run on `approvals`, expiring
 * with the call; the answer is applied with `agent.decide`, so binding, decided-once,
 * executed-once and the audit trail are the agent path's own. Its reply is sent on when the
 * turn completes.
 */
export function agentExecutor<I>(options: AgentExecutorOptions<I>): AgentExecutor<I> {
  const approvals = requestPort(options.port ?? 'approval', {
    request: approvalAskSchema,
    response: approvalAnswerSchema,
    effect: (ask) => ask.effect,
  });
  // Bound to the run, so the calls it raises carry it (their rows' `run`).
  const agentIn = async (ctx: ExecutorContext<AgentExecutorState>) =>
    (await ctx.agent(options.agent)).with({ run: ctx.run });

  const sessionOf = (run: string) => {
    const plain = `wf.${run}.${options.id}`;
    return plain.length <= 128 ? plain : `wf.${sha256Hex(run).slice(0, 32)}.${options.id}`;
  };

  function settle(
    turn: TurnResult,
    ctx: ExecutorContext<AgentExecutorState>,
    customer: string | null,
  ): AgentReply | undefined {
    const asked = new Set(ctx.getState()?.asked ?? []);
    const waiting = turn.approvals.filter((approval) => approval.status === 'pending');
    for (const approval of waiting) {
      if (asked.has(approval.id)) continue;
      // The run's request expires when the call it stands for does.
      ctx.request(
        approvals,
        {
          approval: approval.id,
          session: approval.session,
          tool: approval.tool,
          args: approval.args,
          argsHash: approval.argsHash,
          effect: approval.effect,
          expiresAt: approval.expiresAt,
        },
        // One request, not two: the run waits on the call's own row (its raiser, customer
        // and role as stored), decided with agent.decide like any tool call.
        { expiresAt: approval.expiresAt, toolCall: approval.id },
      );
    }
    ctx.setState({ session: turn.session, asked: waiting.map((approval) => approval.id), customer });
    if (turn.status === 'awaiting_reconciliation') {
      throw new OutcomeUnknownError(
        `An approved call of session ${turn.session} may or may not have run; a person must reconcile it.`,
        {
          hint: `Settle it with \`countersign reconcile REQUEST\`, then \`countersign run resume ${ctx.run}\`.`,
        },
      );
    }
    return turn.status === 'completed' ? { session: turn.session, reply: turn.reply } : undefined;
  }

  const node = executor<I, AgentReply, AgentExecutorState>({
    id: options.id,
    input: options.input,
    output: agentReplySchema,
    state: agentStateSchema,
    ports: [approvals],
    async handle(input, ctx) {
      const agent = await agentIn(ctx);
      const session = sessionOf(ctx.run);
      // Run again from the same checkpoint (a crash before it was committed), the message
      // must not be sent twice: the claim says whether this delivery already sent it.
      const first = await ctx.state.claim(`workflow-agent-turn:${ctx.idempotencyKey}`, session);
      const { text, principal } = options.prompt(input);
      // The session acts for the run's customer unless the prompt names one: its calls' rows
      // then name that customer, who may not decide them.
      const customer = principal ?? ctx.origin.customer;
      if (!first.won) {
        try {
          return settle(await agent.resume(session), ctx, customer);
        } catch (error) {
          // The earlier attempt died before the session existed: the message was never sent.
          if (!CountersignError.is(error) || error.code !== 'NOT_FOUND') throw error;
        }
      }
      // The run's starter posted the message: the raiser of what the agent asks for.
      const by = ctx.origin.by;
      return settle(
        await agent.chat(session, text, {
          ...(customer === null ? {} : { principal: customer }),
          ...(by === null ? {} : { by }),
        }),
        ctx,
        customer,
      );
    },
    async onResponse(answer, ctx) {
      const ask = approvalAskSchema.parse(answer.request);
      const agent = await agentIn(ctx);
      const customer = ctx.getState()?.customer ?? ctx.origin.customer;
      // Expired unanswered: so has the agent's call (same expiresAt). Resuming the session
      // answers it as expired, the model is told, and the turn goes on from there.
      if (answer.expired) return settle(await agent.resume(ask.session), ctx, customer);
      const decision = approvalAnswerSchema.parse(answer.response);
      let turn: TurnResult;
      try {
        turn = await agent.decide(ask.approval, {
          approved: decision.approved,
          by: answer.by,
          ...(decision.reason ? { reason: decision.reason } : {}),
        });
      } catch (error) {
        // Decided already (the run's call was decided with agent.decide — the usual way now —
        // or this delivery ran before) or expired: the agent's record stands, and its session
        // carries on from there. Only answers to requests of checkpoints written before calls
        // were waited on directly decide here.
        if (!CountersignError.is(error) || (error.code !== 'ALREADY_DECIDED' && error.code !== 'EXPIRED'))
          throw error;
        turn = await agent.resume(ask.session);
      }
      return settle(turn, ctx, customer);
    },
  });
  return Object.assign(node, { approvals, agent: options.agent });
}
