import { z } from 'zod';
import { jsonValue } from '../core/json-schema.ts';

/*
 * The shape of a SessionSnapshot (core/session-snapshot.ts), the one description of it:
 * the store's import checks a snapshot against it before any backend sees it (guard.ts,
 * readSnapshot in snapshot-rules.ts), and the session export file is read with the same
 * pieces (agent/session-transfer.ts), so a file and a direct call are refused for the same
 * things. Shape only: times, seqs and ids are judged by snapshot-rules.ts. Every JSON value
 * (arguments, results, outputs, responses) is `jsonValue`, so one nested past MAX_JSON_DEPTH
 * is refused here, never a stack overflow further in. src/store/snapshot-schema.test.ts
 * checks these types against the interfaces they describe.
 */

const text = z.string();
const nullableText = z.string().nullable();
const wholeNumber = z.number().int();

export const approvalEntrySchema = z.object({ by: text, at: text, reason: nullableText });

// An edited call travels with its own binding; the importing side checks it (checkBinding).
export const requestEditSchema = z.object({
  args: jsonValue,
  argsJson: text,
  argsHash: text,
  effect: text,
  effectHash: text,
  diff: z.array(z.object({ field: text, from: jsonValue.optional(), to: jsonValue.optional() })),
  by: text,
  at: text,
});

export const decisionSchema = z.object({
  verdict: z.enum(['approved', 'rejected', 'answered', 'expired']),
  by: text,
  reason: nullableText,
  at: text,
  kind: z.enum(['person', 'moved-on', 'expiry', 'standing-rule', 'auto-rule']),
  response: jsonValue.optional(),
  // Added with edit and quorum: decisions taken before have neither.
  edit: requestEditSchema.optional(),
  approvals: z.array(approvalEntrySchema).optional(),
});

const toolCall = z.object({ id: text, tool: text, args: jsonValue });

export const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), text, by: text.optional() }),
  z.object({ role: z.literal('assistant'), text, calls: z.array(toolCall).optional() }),
  z.object({
    role: z.literal('tool'),
    results: z.array(
      z.object({ callId: text, tool: text, output: jsonValue, isError: z.boolean().optional() }),
    ),
  }),
]);

const disposition = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('run') }),
  z.object({ kind: z.literal('approval'), approvalId: text }),
  z.object({ kind: z.literal('error'), output: text }),
  z.object({ kind: z.literal('queued') }),
]);

export const openBatchSchema = z.object({
  messageSeq: wholeNumber,
  calls: z.array(z.object({ callId: text, tool: text, args: jsonValue, disposition })),
  // Calls a new message kept waiting (onNewMessage 'keep'); batches from before have none.
  kept: z.array(z.object({ callId: text, tool: text, args: jsonValue, approvalId: text })).optional(),
});

export const sessionRecordSchema = z.object({
  id: text,
  agent: text,
  principal: nullableText,
  createdAt: text,
  updatedAt: text,
  messageCount: wholeNumber.min(0),
  batch: openBatchSchema.nullable(),
});

export const storedMessageSchema = z.object({ seq: wholeNumber, at: text, message: messageSchema });

const nudgesSchema = z.object({
  remindAt: nullableText,
  remindedAt: nullableText,
  escalateAt: nullableText,
  escalateTo: nullableText,
  escalatedAt: nullableText,
  expiringAt: nullableText,
  expiringSentAt: nullableText,
});

export const approvalRequestSchema = z.object({
  id: text,
  kind: z.enum(['tool-call', 'port']),
  session: text,
  run: nullableText,
  agent: text,
  callId: text,
  tool: text,
  args: jsonValue,
  argsJson: text,
  argsHash: text,
  effect: text,
  createdAt: text,
  expiresAt: text,
  status: z.enum(['pending', 'approved', 'rejected', 'answered', 'expired']),
  decision: decisionSchema.nullable(),
  raisedBy: nullableText,
  customer: nullableText,
  requiredRole: nullableText,
  effectHash: nullableText,
  editable: z.array(text),
  approvalsNeeded: wholeNumber.min(1),
  approvals: z.array(approvalEntrySchema),
  edit: requestEditSchema.nullable(),
  revision: wholeNumber.min(0),
  claim: z.object({ by: text, until: text }).nullable(),
  escalatedTo: nullableText,
  nudges: nudgesSchema.nullable(),
});

export const executionRecordSchema = z.object({
  requestId: text,
  session: text,
  callId: text,
  tool: text,
  args: jsonValue,
  idempotencyKey: text,
  status: z.enum(['started', 'succeeded', 'failed', 'unknown']),
  result: jsonValue.nullable(),
  attempts: wholeNumber,
  startedAt: text,
  finishedAt: nullableText,
});

export const sessionSnapshotSchema = z.object({
  session: sessionRecordSchema,
  messages: z.array(storedMessageSchema),
  approvals: z.array(approvalRequestSchema),
  executions: z.array(executionRecordSchema),
});
