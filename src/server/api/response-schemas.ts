import { z } from 'zod';
import { AUDIT_KINDS } from '../../core/audit.ts';
import { AUDIT_REQUIREMENTS } from '../../core/audit-coverage.ts';
import { jsonValue } from '../../core/json-schema.ts';
import { type HttpErrorCode, statusOfCode } from '../http/error-status.ts';
import { approvalStatus, executionStatus } from './schemas.ts';

/**
 * Every shape the HTTP API responds with. The OpenAPI document's components are generated
 * from `components` below, and test/server/response-schemas.test.ts checks at compile time
 * that each schema's type is exactly the type the route builds, so neither can drift.
 * Objects are `z.object` (documented open: a field added later does not break a client that
 * validates); the contract tests close them, so a field sent but not documented fails there.
 */

const timestamp = z.string().meta({ format: 'date-time' });

export const errorBody = z.object({
  error: z.object({
    code: z
      .enum(Object.keys(statusOfCode) as [HttpErrorCode, ...HttpErrorCode[]])
      .describe('Stable; branch on it'),
    message: z.string().describe('What happened and what to do, for a person'),
  }),
});

const argChange = z.object({
  field: z.string(),
  from: jsonValue.optional().describe('Absent when the field was absent'),
  to: jsonValue.optional().describe('Absent when the field was removed'),
});

export const requestEdit = z
  .object({
    args: jsonValue.describe('The edited arguments: what runs'),
    argsJson: z.string().describe('Canonical JSON of args'),
    argsHash: z.string().describe('SHA-256 of argsJson'),
    effect: z.string().describe('The effect preview of the edited call'),
    effectHash: z.string().describe('SHA-256 of effect'),
    diff: z.array(argChange).describe('What changed, field by field'),
    by: z.string().describe('Who edited it'),
    at: timestamp,
  })
  .describe('A call as a person edited it before approving; the tool never changes');

export const approvalEntry = z.object({
  by: z.string(),
  at: timestamp,
  reason: z.string().nullable(),
});

export const decision = z.object({
  verdict: z.enum(['approved', 'rejected', 'answered', 'expired']),
  by: z.string().describe('Who decided: the approver, or the system for expiry and moved-on'),
  reason: z.string().nullable(),
  at: timestamp,
  kind: z.enum(['person', 'moved-on', 'expiry', 'standing-rule', 'auto-rule']),
  response: jsonValue.optional().describe("A port request's answer, as recorded"),
  edit: requestEdit.optional().describe('Approved with changes: the edited call, which is what ran'),
  approvals: z
    .array(approvalEntry)
    .optional()
    .describe('The quorum this approval completed: every approver, oldest first'),
});

export const claim = z
  .object({ by: z.string().describe('The approver working on it'), until: timestamp })
  .describe('Who is working on it and until when; it lapses by itself, and never stops anyone deciding');

const nudgeTime = timestamp.nullable();
export const nudges = z
  .object({
    remindAt: nudgeTime.describe(
      'When request.reminder fires; null when the tool or port sets no remindAfter',
    ),
    remindedAt: nudgeTime.describe('When the reminder fired; null until it has'),
    escalateAt: nudgeTime.describe('When request.escalated fires'),
    escalateTo: z.string().nullable().describe('The role it escalates to'),
    escalatedAt: nudgeTime.describe('When the escalation fired'),
    expiringAt: nudgeTime.describe('When request.expiring warns that it will expire'),
    expiringSentAt: nudgeTime.describe('When the warning fired'),
  })
  .describe('Reminder, escalation and expiry-warning times, each fired once');

export const approval = z.object({
  id: z.string(),
  kind: z
    .enum(['tool-call', 'port'])
    .describe("tool-call: a model's call, approved or rejected; port: a workflow's request, answered"),
  session: z.string().describe("The agent session; for a port request, the run's audit session wf.RUN"),
  run: z.string().nullable().describe('The workflow run waiting on it, if any'),
  tool: z.string().describe("The tool's name; for a port request, the port's id"),
  args: jsonValue,
  argsHash: z.string().describe('SHA-256 of the canonical JSON of args'),
  effect: z.string().describe('What will happen, in words'),
  createdAt: timestamp,
  expiresAt: timestamp,
  status: approvalStatus,
  decision: decision.nullable().describe('null while pending'),
  integrity: z
    .enum(['ok', 'mismatch'])
    .describe('mismatch: the stored arguments no longer hash to what was recorded; do not approve'),
  agent: z.string().describe('The agent that raised it; for a port request, the workflow'),
  callId: z.string().nullable().describe("The model's id of the call, to find it in the conversation"),
  customer: z.string().nullable().describe('The customer it acts for (the session or run principal)'),
  requiredRole: z.string().nullable().describe('The role an approver needs; null when any approver may'),
  standingAllowed: z.boolean().describe('Whether "always for this session" may be chosen for this tool'),
  editable: z
    .array(z.string())
    .describe(
      'Argument fields a person may change before approving ({"approved": true, "edit": {…}}); [] when none',
    ),
  approvalsNeeded: z
    .number()
    .int()
    .min(1)
    .describe('How many distinct approvers must approve (1 by default)'),
  approvals: z.array(approvalEntry).describe('Approvals so far while a quorum fills, oldest first'),
  edit: requestEdit
    .nullable()
    .describe(
      'The call as an approver edited it while the request still waits (what later approvers approve)',
    ),
  raisedBy: z
    .string()
    .nullable()
    .describe(
      'Who raised it (posted the message that led to it); they may not decide it. null in older rows',
    ),
  selfApproval: z
    .boolean()
    .describe("Whether the raiser and the customer may decide it themselves (the agent's selfApproval)"),
  responseSchema: z
    .record(z.string(), jsonValue)
    .nullable()
    .describe("A port request's answer schema (JSON Schema), to draw a form; null for a tool call"),
  claim: claim.nullable().describe('null when nobody holds it (a lapsed claim is none)'),
  escalatedTo: z
    .string()
    .nullable()
    .describe('The role it was escalated to; its holders may decide it too. null when not escalated'),
  nudges: nudges
    .nullable()
    .describe('null when its tool or port configures no reminder, escalation or warning'),
});

export const execution = z.object({
  requestId: z.string(),
  session: z.string(),
  tool: z.string(),
  args: jsonValue,
  status: executionStatus,
  result: jsonValue.nullable(),
  idempotencyKey: z.string(),
  startedAt: timestamp,
  finishedAt: timestamp.nullable(),
});

export const turnResult = z.object({
  session: z.string(),
  status: z.enum(['completed', 'awaiting_approval', 'awaiting_reconciliation', 'continuing']),
  reply: z
    .string()
    .nullable()
    .describe("The agent's last words in this run; null when it waits without having spoken"),
  approvals: z.array(approval).describe('Requests of this session still waiting for a person'),
  unknown: z
    .array(execution)
    .describe('Approved calls whose outcome is unknown after a crash: reconcile them'),
});

const toolCall = z.object({ id: z.string(), tool: z.string(), args: jsonValue });
const toolResult = z.object({
  callId: z.string(),
  tool: z.string(),
  output: jsonValue,
  isError: z.boolean().optional(),
});

export const message = z.object({
  seq: z.number().int(),
  at: timestamp,
  message: z.discriminatedUnion('role', [
    z.object({
      role: z.literal('user'),
      text: z.string(),
      by: z.string().optional().describe('Who posted it (the authenticated caller)'),
    }),
    z.object({ role: z.literal('assistant'), text: z.string(), calls: z.array(toolCall).optional() }),
    z.object({ role: z.literal('tool'), results: z.array(toolResult) }),
  ]),
});

export const session = z.object({
  id: z.string(),
  agent: z.string(),
  customer: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
  messages: z.array(message),
  pending: z.array(approval),
});

/** Built in the route itself (the others are library types, checked in the schema test). */
export type SessionView = z.output<typeof session>;

export const auditEntry = z.object({
  seq: z.number().int(),
  at: timestamp,
  // Any string: entries written by other versions keep their kinds (AUDIT_KINDS lists this one's).
  kind: z
    .string()
    .describe(
      `What happened: ${AUDIT_KINDS.join(', ')}; entries written by other versions may carry other kinds.`,
    ),
  session: z.string().nullable(),
  requestId: z.string().nullable(),
  actor: z.string(),
  data: z.record(z.string(), jsonValue).describe('`{}` once erased (erasedAt)'),
  dataHash: z
    .string()
    .optional()
    .describe(
      "SHA-256 of the data's canonical JSON, which the link covers (absent on entries written before 0.2, whose link covers the data)",
    ),
  erasedAt: z
    .string()
    .optional()
    .describe(
      "When the entry's data was erased (a customer's erasure or audit retention), or `key-destroyed` when only its data key was destroyed; its link still verifies",
    ),
  prevHash: z.string(),
  hash: z.string(),
});

export const auditVerification = z.union([
  z.object({
    ok: z.literal(true),
    entries: z.number().int(),
    erased: z.number().int().describe('How many of the entries had their data erased (their links verified)'),
    head: z
      .object({ seq: z.number().int(), hash: z.string() })
      .nullable()
      .describe('The last entry; record it elsewhere so a chain cut short can be noticed'),
  }),
  z.object({
    ok: z.literal(false),
    entries: z.number().int(),
    brokenAt: z.number().int().describe('The first entry whose link does not hold'),
    problem: z.string(),
  }),
  z.object({
    ok: z.literal(false),
    entries: z.number().int(),
    brokenAt: z.null().describe('null: the chain links up, but entries are missing'),
    problem: z.string(),
    missing: z
      .array(
        z.object({
          missing: z.enum(AUDIT_REQUIREMENTS).describe('The audit entry kind that is missing'),
          count: z.number().int(),
          first: z.array(z.string()).describe('The first few request ids lacking it'),
        }),
      )
      .describe('Requests and ledger rows without the audit entries their state implies'),
  }),
]);

export const rule = z.object({
  id: z.string(),
  session: z.string(),
  tool: z.string(),
  toolIdentity: z.string(),
  argsHash: z.string().nullable().describe('Set for "this tool with these arguments"; null for "this tool"'),
  sourceRequest: z.string().describe('The request whose approval created the rule'),
  createdAt: timestamp,
  createdBy: z.string(),
  revokedAt: timestamp.nullable(),
  revokedBy: z.string().nullable(),
});

const runStatus = z.enum(['running', 'awaiting_input', 'completed', 'failed', 'expired']);

export const runSummary = z.object({
  run: z.string(),
  workflow: z.string(),
  version: z.number().int(),
  status: runStatus,
  checkpoint: z.string().describe("The run's latest checkpoint"),
  customer: z
    .string()
    .nullable()
    .describe('The customer the run was started for (`user` when it started); null when none'),
  createdAt: timestamp.describe('When the run started (its first checkpoint)'),
  updatedAt: timestamp.describe('When its latest checkpoint was written'),
});

export const runView = z.object({
  run: z.string(),
  workflow: z.string(),
  version: z.number().int(),
  status: runStatus,
  checkpoint: z.string().describe('The checkpoint this view was read from'),
  requests: z.array(
    z.object({
      id: z.string(),
      port: z.string(),
      data: jsonValue,
      createdAt: timestamp,
      expiresAt: timestamp
        .nullable()
        .describe('When it stops taking answers; null for requests older than expiry (never)'),
    }),
  ),
  outputs: z.array(jsonValue),
  expired: z
    .array(z.object({ requestId: z.string(), port: z.string(), expiresAt: timestamp, at: timestamp }))
    .optional()
    .describe('Requests that expired unanswered; the branch waiting on each ended there'),
  error: z
    .object({ code: z.string(), message: z.string(), executor: z.string().nullable() })
    .optional()
    .describe('Why the run failed'),
});

export const checkpoint = z.object({
  checkpointId: z.string(),
  parentCheckpointId: z.string().nullable().describe("null only for a run's first checkpoint"),
  superstep: z.number().int(),
  createdAt: timestamp,
});

export const requestOutcome = z.object({
  request: approval.describe('The request as it stands after the decision'),
  turn: turnResult.nullable().describe("The agent's turn after a tool call was decided; null for a port"),
  run: runView
    .nullable()
    .describe('The run after it continued: a port request’s, or the run whose agent made the call'),
});

/** The named schemas of the document (`#/components/schemas/<name>`). */
const requestKind = z.enum(['tool-call', 'port']);
const count = z.int().min(0);

export const decisionStats = z.object({
  since: timestamp,
  until: timestamp.describe('Exclusive'),
  decided: z
    .object({ approved: count, rejected: count, answered: count, expired: count })
    .describe('Every request decided in the window, by a person, a rule, expiry or a new message'),
  timeToDecision: z
    .array(
      z.object({
        kind: requestKind,
        tool: z.string(),
        role: z.string().nullable(),
        decisions: count,
        p50Ms: count,
        p90Ms: count,
      }),
    )
    .describe(
      'From raised to decided by a person, per tool (or port) and required role; nearest-rank percentiles',
    ),
  rejections: z.object({
    total: count,
    byKind: z.array(
      z.object({
        kind: z.enum(['person', 'moved-on', 'expiry', 'standing-rule', 'auto-rule']),
        count,
      }),
    ),
    reasons: z
      .array(z.object({ reason: z.string(), count }))
      .describe("A person's reasons, most frequent first, at most 10"),
    reasonsFrom: count.describe(
      'How many of the latest person rejections the reasons are counted from (at most 500)',
    ),
  }),
  expiries: z.object({
    total: count,
    byTool: z.array(z.object({ kind: requestKind, tool: z.string(), count })),
  }),
  approvers: z
    .array(z.object({ approver: z.string(), approved: count, rejected: count, answered: count }))
    .describe('Person decisions per approver, most first'),
});

export const components = {
  Error: errorBody,
  Decision: decision,
  Approval: approval,
  Execution: execution,
  TurnResult: turnResult,
  Message: message,
  Session: session,
  AuditEntry: auditEntry,
  AuditVerification: auditVerification,
  Rule: rule,
  RunSummary: runSummary,
  RunView: runView,
  Checkpoint: checkpoint,
  RequestOutcome: requestOutcome,
  DecisionStats: decisionStats,
} satisfies Record<string, z.ZodType>;

const erasureCounts = z.object({
  sessions: z.number().int(),
  messages: z.number().int(),
  requests: z.number().int(),
  executions: z.number().int().describe('Ledger rows'),
  runs: z.number().int(),
  checkpoints: z.number().int(),
  auditEntries: z
    .number()
    .int()
    .describe('Entries whose data was erased in place (the entries and their links stay)'),
  deliveries: z.number().int().describe('Webhook outbox rows'),
});

export const erasureReport = z.object({
  principal: z.string(),
  at: timestamp,
  by: z.string().describe('The admin who erased (the audit entry names them too)'),
  erased: z
    .boolean()
    .describe('false: nothing named the customer ("nothing to erase"); erasing twice is safe'),
  keyForgotten: z.boolean().describe("With encryption at rest: the customer's data key was destroyed"),
  expired: z
    .array(z.string())
    .describe('Pending requests expired first, so none can be approved or run later'),
  decidedFirst: z
    .array(z.string())
    .describe('Pending requests a person decided while the erasure ran; removed all the same'),
  counts: erasureCounts,
  stateKeys: z
    .number()
    .int()
    .describe("Application-state keys the app names as the customer's (customerState), overwritten"),
});
