import type { JsonValue } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';
import type { AutoApproval } from './match-rule.ts';

/**
 * What is known about one call of a model step once the tool's own checks have run: the
 * facts classification decides on. Gathering them runs tool code (validation, authorize,
 * needsApproval, auto-approval rules); deciding on them runs none, and reads no store.
 */
export type CallFacts =
  | { kind: 'unknown-tool' }
  /** The model's arguments were not JSON at all. */
  | { kind: 'unparseable'; toolName: string }
  | { kind: 'invalid-args'; error: string }
  | { kind: 'not-allowed'; args: JsonValue; reason: string }
  | { kind: 'no-approval'; args: JsonValue }
  /** `auto`: the standing rule or auto-approval rule that covers it, if any. */
  | { kind: 'needs-approval'; args: JsonValue; auto: AutoApproval | null };

/** What becomes of one call: answered with an error, run, queued, or raised as a request. */
export type CallPlan =
  | { kind: 'error'; args: JsonValue; output: string }
  | { kind: 'run'; args: JsonValue }
  /** One request at a time: it waits behind the request raised before it. */
  | { kind: 'queue'; args: JsonValue }
  /** Raised, and waits for a person. */
  | { kind: 'ask'; args: JsonValue }
  /** Raised, and approved on the spot by a rule. */
  | { kind: 'auto-approve'; args: JsonValue; approval: AutoApproval };

export interface StepClassification {
  plans: CallPlan[];
  /** A request of this step waits for a person. */
  askedPerson: boolean;
  /** A rule approved a request of this step. */
  autoApproved: boolean;
}

/**
 * For a call that needs approval: a rule that covers it approves it; otherwise it is asked
 * of a person, unless requests surface one at a time and one already waits, when it queues.
 */
export function approvalPlan(
  auto: AutoApproval | null,
  state: { waiting: boolean; oneAtATime: boolean },
): 'auto-approve' | 'queue' | 'ask' {
  if (auto) return 'auto-approve';
  return state.waiting && state.oneAtATime ? 'queue' : 'ask';
}

/** Decides per call of a model step, in order, whether it runs, errs back to the model, or waits. */
export function classifyCalls(
  calls: readonly ToolCall[],
  facts: readonly CallFacts[],
  options: { knownTools: readonly string[]; oneAtATime: boolean },
): StepClassification {
  let waiting = false;
  let autoApproved = false;
  const plans: CallPlan[] = [];
  for (const [index, call] of calls.entries()) {
    const fact = facts[index];
    if (!fact) throw new Error(`classifyCalls: no facts for call ${call.id}`);
    if (fact.kind !== 'needs-approval') {
      plans.push(planWithoutApproval(call, fact, options.knownTools));
      continue;
    }
    const plan = approvalPlan(fact.auto, { waiting, oneAtATime: options.oneAtATime });
    if (plan === 'auto-approve' && fact.auto) {
      autoApproved = true;
      plans.push({ kind: 'auto-approve', args: fact.args, approval: fact.auto });
      continue;
    }
    if (plan === 'ask') waiting = true;
    plans.push({ kind: plan === 'queue' ? 'queue' : 'ask', args: fact.args });
  }
  return { plans, askedPerson: waiting, autoApproved };
}

function planWithoutApproval(
  call: ToolCall,
  fact: Exclude<CallFacts, { kind: 'needs-approval' }>,
  knownTools: readonly string[],
): CallPlan {
  if (fact.kind === 'no-approval') return { kind: 'run', args: fact.args };
  if (fact.kind === 'not-allowed')
    return { kind: 'error', args: fact.args, output: `Not allowed: ${fact.reason}` };
  if (fact.kind === 'invalid-args') return { kind: 'error', args: call.args, output: fact.error };
  if (fact.kind === 'unparseable')
    return {
      kind: 'error',
      args: call.args,
      output: `Arguments for ${fact.toolName} were not valid JSON. Nothing was run. Send a JSON object matching the tool's schema.`,
    };
  return {
    kind: 'error',
    args: call.args,
    output: `Unknown tool "${call.tool}". Available tools: ${knownTools.join(', ')}.`,
  };
}
