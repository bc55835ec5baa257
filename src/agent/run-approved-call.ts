import type { ApprovalRequest, RequestEdit } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { bindingError, bindingProblem, toolCallBinding } from '../core/check-binding.ts';
import { describeDiff } from '../core/edit-call.ts';
import type { IntegrityViolationError } from '../core/errors/integrity-violation-error.ts';
import type { JsonValue } from '../core/json.ts';
import type { ToolResult } from '../core/messages.ts';
import type { BatchCall } from '../core/session.ts';
import { signal } from '../core/signals.ts';
import { ATTR, SPAN, setSpanAttributes, withSpan } from '../core/tracing.ts';
import { emit } from '../events/emit.ts';
import type { ExecutionFinish, LeaseFence, Store } from '../store/store.ts';
import type { ToolContext } from '../tools/define-tool.ts';
import { toolOutput } from '../tools/tool-output.ts';
import { faultPoint } from './fault-point.ts';
import { leaseNow } from './lease.ts';
import type { AgentRuntime } from './runtime.ts';

export interface ApprovedCallDeps {
  runtime: AgentRuntime;
  store: Store;
  session: string;
  toolContext(callId: string, requestId: string | null): ToolContext;
  /** The run's lease owner: every ledger start is fenced on it (ExecutionStart.lease). */
  leaseOwner: string;
  /** Throws SESSION_BUSY unless the run still holds the session's lease (lease.ts, mustHoldLease). */
  mustHoldLease(): Promise<void>;
}

/** A ledger result left for the caller to write with its next step (see `deferFinish`). */
export type DeferredFinish = ExecutionFinish & { requestId: string };

export type ApprovedCallOutcome =
  | { kind: 'result'; result: ToolResult; finish?: DeferredFinish }
  | { kind: 'unknown' }
  | { kind: 'integrity'; result: ToolResult; error: IntegrityViolationError };

/**
 * The stored call, exactly once: ledger row before, result after. A row found in
 * `started` means an earlier process died mid-call; only idempotent tools run again.
 * The row is started only while this run holds the session's lease (fenced in the store):
 * a run whose lease was taken over fails with SESSION_BUSY before anything runs, and the new
 * holder runs the call, instead of finding it started and calling it unknown.
 */
export function runApprovedCall(
  deps: ApprovedCallDeps,
  call: BatchCall,
  request: ApprovalRequest,
  deferFinish = false,
): Promise<ApprovedCallOutcome> {
  const attributes = {
    [ATTR.requestId]: request.id,
    [ATTR.session]: deps.session,
    [ATTR.agent]: deps.runtime.agentName,
    [ATTR.tool]: request.tool,
    [ATTR.run]: request.run,
  };
  return withSpan(SPAN.execution, attributes, async (span) => {
    const outcome = await runOnce(deps, call, request, deferFinish);
    const status =
      outcome.kind === 'result' ? (outcome.result.isError ? 'failed' : 'succeeded') : outcome.kind;
    setSpanAttributes(span, { [ATTR.outcome]: status });
    return outcome;
  });
}

/** runApprovedCall without its span. */
async function runOnce(
  deps: ApprovedCallDeps,
  call: BatchCall,
  request: ApprovalRequest,
  /**
   * Return the ledger result instead of writing it, for the caller to commit with the step
   * that carries the tool result: one write fewer, and the two can no longer disagree. Only
   * for the last call of a batch that runs anything, so a crash in a later call never leaves
   * this one looking unknown.
   */
  deferFinish = false,
): Promise<ApprovedCallOutcome> {
  const { runtime, store, session } = deps;
  const tool = runtime.toolsByName.get(request.tool);
  const now = () => runtime.now().toISOString();
  const key = `countersign:${request.id}`;
  const base = { callId: call.callId, tool: request.tool };
  // What runs: the call as a person edited it when they approved it with changes (bound by
  // its own hash, checked below with the rest of the binding), else the stored call.
  const edit = request.decision?.edit;
  const args = edit?.args ?? request.args;
  const argsHash = edit?.argsHash ?? request.argsHash;
  const told = (output: JsonValue): JsonValue => (edit ? approvedWithChanges(edit, output) : output);
  // Re-checked right before it runs: the row may have been edited since the decision.
  const problem = !tool
    ? `tool ${request.tool} is no longer registered`
    : (bindingProblem(toolCallBinding(request)) ??
      (canonicalJson(call.args) !== request.argsJson
        ? 'the call in the session differs from the approved request'
        : null));
  if (problem || !tool) {
    const refused: AuditEvent = {
      kind: 'tamper.refused',
      session: session,
      requestId: request.id,
      actor: 'countersign',
      data: { problem: problem ?? 'unknown tool', argsHash: request.argsHash },
    };
    let record = await store.getExecution(request.id);
    if (record === null) {
      const started = await store.startExecution(
        {
          requestId: request.id,
          session: session,
          callId: call.callId,
          tool: request.tool,
          args,
          idempotencyKey: key,
          at: now(),
          lease: await leaseFence(deps),
        },
        [refused],
      );
      if (started.created) {
        // Nothing ran it before: the refusal is the outcome.
        await store.finishExecution(request.id, {
          status: 'failed',
          result: `Refused: ${problem}`,
          at: now(),
        });
        return {
          kind: 'integrity',
          error: bindingError(request.id, problem ?? 'unknown tool', 'executing'),
          result: {
            ...base,
            output: `Not done: ${problem}. The call was refused for safety.`,
            isError: true,
          },
        };
      }
      record = started.record;
    }
    if (record.status === 'succeeded' || record.status === 'failed')
      return {
        kind: 'result',
        result: { ...base, output: told(record.result), isError: record.status !== 'succeeded' },
      };
    // Started by an earlier run (one that died mid-call), or already unknown: the call may
    // have run, as it was approved. It is not run again, and only a person can say what
    // happened, so the row is unknown, never failed (invariant 3, docs/architecture.md); the
    // model is told nothing until it is reconciled.
    if (record.status === 'started') {
      // Another run's start: ours only to call unknown while the session is still ours.
      await deps.mustHoldLease();
      await store.finishExecution(request.id, {
        status: 'unknown',
        result: null,
        at: now(),
        audit: [refused],
      });
      signal({ kind: 'outcome-unknown' });
    }
    return { kind: 'unknown' };
  }

  // Throws SESSION_BUSY, writing nothing, if the lease is no longer this run's.
  const started = await store.startExecution(
    {
      requestId: request.id,
      session: session,
      callId: call.callId,
      tool: tool.name,
      args,
      idempotencyKey: key,
      at: now(),
      lease: await leaseFence(deps),
    },
    [
      {
        kind: 'execution.started',
        session: session,
        requestId: request.id,
        actor: runtime.agentName,
        data: { tool: tool.name, argsHash, idempotencyKey: key },
      },
    ],
  );
  if (!started.created) {
    const record = started.record;
    if (record.status === 'succeeded' || record.status === 'failed') {
      return {
        kind: 'result',
        result: { ...base, output: told(record.result), isError: record.status === 'failed' },
      };
    }
    if (!tool.idempotent) {
      if (record.status !== 'unknown') {
        // Another run's start: ours only to call unknown while the session is still ours.
        await deps.mustHoldLease();
        await store.finishExecution(request.id, { status: 'unknown', result: null, at: now() });
        signal({ kind: 'outcome-unknown' });
      }
      return { kind: 'unknown' };
    }
    // Idempotent: the same key makes a second run a no-op at the tool's side.
    await store.appendAudit(
      [
        {
          kind: 'execution.retried',
          session,
          requestId: request.id,
          actor: runtime.agentName,
          data: { tool: tool.name, idempotencyKey: key, previousStatus: record.status },
        },
      ],
      now(),
    );
  }
  faultPoint('after-started');
  const context = deps.toolContext(call.callId, request.id);
  let status: 'succeeded' | 'failed' = 'succeeded';
  let output: JsonValue;
  try {
    const allowed = await tool.authorize(args, context);
    if (allowed !== true) {
      status = 'failed';
      output = `Not allowed: ${allowed}`;
    } else {
      output = toolOutput(await tool.execute(args, context));
    }
  } catch (error) {
    status = 'failed';
    output = `The tool failed: ${errorText(error)}`;
  }
  faultPoint('after-tool');
  const finish: DeferredFinish = {
    requestId: request.id,
    status,
    result: output,
    at: now(),
    audit: [
      {
        kind: 'execution.finished',
        session: session,
        requestId: request.id,
        actor: runtime.agentName,
        data: { status, resultHash: sha256Hex(canonicalJson(output)) },
      },
    ],
  };
  const result = { ...base, output: told(output), isError: status === 'failed' };
  if (deferFinish) return { kind: 'result', result, finish };
  await store.finishExecution(request.id, finish);
  announceFinished(runtime, session, finish);
  return { kind: 'result', result };
}

/** This run's lease, judged on the lease clock (leaseNow: on PostgreSQL the server's). */
async function leaseFence(deps: ApprovedCallDeps): Promise<LeaseFence> {
  return { owner: deps.leaseOwner, nowMs: await leaseNow(deps.store) };
}

/** Once a ledger result is durable: the crash-test boundary, then the live event. */
export function announceFinished(runtime: AgentRuntime, session: string, finish: DeferredFinish): void {
  faultPoint('after-result');
  emit(runtime.events, {
    type: 'execution.finished',
    at: runtime.now().toISOString(),
    requestId: finish.requestId,
    session,
    status: finish.status,
  });
}

/**
 * The model's result of a call a person approved with changes: what changed, what ran, and
 * the tool's own result, so it does not go on believing its proposal ran.
 */
export function approvedWithChanges(edit: RequestEdit, output: JsonValue): JsonValue {
  return {
    note: `A person approved this call with changes (${describeDiff(edit.diff)}); it ran as ${edit.argsJson}, not as proposed.`,
    changes: edit.diff.map((change) => ({ ...change })) as unknown as JsonValue,
    result: output,
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
