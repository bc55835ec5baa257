import { z } from 'zod';
import type { ApprovalRequest } from '../core/approval.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { JsonValue } from '../core/json.ts';
import { jsonValue } from '../core/json-schema.ts';
import type { SessionSnapshot, Store } from '../store/store.ts';

export const SESSION_EXPORT_SCHEMA_VERSION = 1;

const decision = z.object({
  verdict: z.enum(['approved', 'rejected', 'expired']),
  by: z.string(),
  reason: z.string().nullable(),
  at: z.string(),
  kind: z.enum(['person', 'moved-on', 'expiry', 'standing-rule', 'auto-rule']),
});
const toolCall = z.object({ id: z.string(), tool: z.string(), args: jsonValue });
const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), text: z.string(), by: z.string().optional() }),
  z.object({ role: z.literal('assistant'), text: z.string(), calls: z.array(toolCall).optional() }),
  z.object({
    role: z.literal('tool'),
    results: z.array(
      z.object({ callId: z.string(), tool: z.string(), output: jsonValue, isError: z.boolean().optional() }),
    ),
  }),
]);
const disposition = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('run') }),
  z.object({ kind: z.literal('approval'), approvalId: z.string() }),
  z.object({ kind: z.literal('error'), output: z.string() }),
  z.object({ kind: z.literal('queued') }),
]);
const body = z.object({
  schemaVersion: z.literal(SESSION_EXPORT_SCHEMA_VERSION),
  session: z.object({
    id: z.string(),
    agent: z.string(),
    principal: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    batch: z
      .object({
        messageSeq: z.number().int(),
        calls: z.array(z.object({ callId: z.string(), tool: z.string(), args: jsonValue, disposition })),
      })
      .nullable(),
  }),
  messages: z.array(z.object({ at: z.string(), message })),
  approvals: z.array(
    z.object({
      id: z.string(),
      callId: z.string(),
      tool: z.string(),
      argsJson: z.string(),
      argsHash: z.string(),
      effect: z.string(),
      createdAt: z.string(),
      expiresAt: z.string(),
      status: z.enum(['pending', 'approved', 'rejected', 'expired']),
      decision: decision.nullable(),
      // Added later: files exported before it have none.
      raisedBy: z.string().nullable().optional(),
    }),
  ),
  executions: z.array(
    z.object({
      requestId: z.string(),
      callId: z.string(),
      tool: z.string(),
      idempotencyKey: z.string(),
      status: z.enum(['started', 'succeeded', 'failed', 'unknown']),
      result: jsonValue.nullable(),
      attempts: z.number().int(),
      startedAt: z.string(),
      finishedAt: z.string().nullable(),
    }),
  ),
});
type ExportBody = z.infer<typeof body>;
export type SessionExport = ExportBody & { digest: string };

/**
 * A self-contained copy of a session, compact enough to mail around (a seed-scenario session
 * with one waiting request is well under 1.5 KB). The digest detects edits made in transit;
 * it is not a signature — anyone can recompute it, so treat imports as trusted input.
 */
export async function exportSession(store: Store, id: string): Promise<SessionExport> {
  const snapshot = await store.exportSession(id);
  if (!snapshot) throw new NotFoundError(`Session ${id} does not exist.`);
  const { session } = snapshot;
  const exported: ExportBody = {
    schemaVersion: SESSION_EXPORT_SCHEMA_VERSION,
    session: {
      id: session.id,
      agent: session.agent,
      principal: session.principal,
      createdAt: session.createdAt,
      updatedAt: session.updatedAt,
      batch: session.batch,
    },
    messages: snapshot.messages.map((stored) => ({ at: stored.at, message: stored.message })),
    approvals: snapshot.approvals.map(({ args: _a, session: _s, agent: _g, ...rest }) => rest),
    executions: snapshot.executions.map(({ args: _a, session: _s, ...rest }) => rest),
  };
  return { ...exported, digest: sha256Hex(canonicalJson(exported)) };
}

/** Refuses anything malformed or altered with INVALID_INPUT, before writing a byte. */
export function parseSessionExport(input: unknown): SessionSnapshot {
  if (typeof input !== 'object' || input === null) throw invalid('the file does not hold a JSON object');
  const { digest, ...rest } = input as Record<string, unknown>;
  if (rest.schemaVersion !== SESSION_EXPORT_SCHEMA_VERSION) {
    throw invalid(
      `schemaVersion ${JSON.stringify(rest.schemaVersion)} is not supported (expected ${SESSION_EXPORT_SCHEMA_VERSION})`,
    );
  }
  const parsed = body.safeParse(rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`${issue?.path.join('.') || 'file'}: ${issue?.message ?? 'malformed'}`);
  }
  if (typeof digest !== 'string' || digest !== sha256Hex(canonicalJson(parsed.data))) {
    throw invalid('its digest does not match its content: the file was altered after export');
  }
  const data = parsed.data;
  const approvals: ApprovalRequest[] = data.approvals.map((approval) => {
    if (sha256Hex(approval.argsJson) !== approval.argsHash) {
      throw invalid(`request ${approval.id}: its arguments do not match their hash`);
    }
    return {
      ...approval,
      raisedBy: approval.raisedBy ?? null,
      session: data.session.id,
      agent: data.session.agent,
      args: JSON.parse(approval.argsJson) as JsonValue,
    };
  });
  const byId = new Map(approvals.map((approval) => [approval.id, approval]));
  for (const call of data.session.batch?.calls ?? []) {
    if (call.disposition.kind !== 'approval') continue;
    const approval = byId.get(call.disposition.approvalId);
    if (!approval) throw invalid(`the waiting call ${call.callId} names a request that is not in the file`);
    if (canonicalJson(call.args) !== approval.argsJson || call.tool !== approval.tool) {
      throw invalid(`the waiting call ${call.callId} differs from request ${approval.id}`);
    }
  }
  return {
    session: { ...data.session, messageCount: data.messages.length },
    messages: data.messages.map((stored, seq) => ({ seq, at: stored.at, message: stored.message })),
    approvals,
    executions: data.executions.map((execution) => ({
      ...execution,
      session: data.session.id,
      args: byId.get(execution.requestId)?.args ?? null,
    })),
  };
}

export async function importSession(store: Store, input: unknown, by = 'unknown'): Promise<SessionSnapshot> {
  const snapshot = parseSessionExport(input);
  await store.importSession(snapshot, [
    {
      kind: 'session.imported',
      session: snapshot.session.id,
      requestId: null,
      actor: by,
      data: { messages: snapshot.messages.length, approvals: snapshot.approvals.length },
    },
  ]);
  return snapshot;
}

function invalid(problem: string): InvalidInputError {
  return new InvalidInputError(`Cannot import the session: ${problem}.`, {
    hint: 'Export it again with `countersign session export` and import the file unchanged.',
  });
}
