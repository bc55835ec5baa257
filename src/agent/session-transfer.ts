import { z } from 'zod';
import type { ApprovalRequest } from '../core/approval.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { checkBinding, toolCallBinding } from '../core/check-binding.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { userIdPattern } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { LEGACY_WAITING_FIELDS } from '../core/request-defaults.ts';
import { assertSnapshotInstants } from '../store/snapshot-rules.ts';
import {
  approvalRequestSchema,
  decisionSchema,
  executionRecordSchema,
  sessionRecordSchema,
  storedMessageSchema,
} from '../store/snapshot-schema.ts';
import type { SessionSnapshot, Store } from '../store/store.ts';
import { checkSignature, type ExportKeyring, type ExportSignature, signExport } from './export-keys.ts';
import { type ImportPlan, importAudit, planSignedImport, planUnsignedImport } from './import-trust.ts';

/** 2 added the optional `signature`; version 1 files (digest only) are read as unsigned. */
export const SESSION_EXPORT_SCHEMA_VERSION = 2;
const READABLE_VERSIONS: readonly number[] = [1, 2];

// The file's pieces are the store snapshot's (snapshot-schema.ts): a file and a direct
// store.importSession are refused for the same shapes. What the file leaves out or makes
// optional is said here.
// Only tool calls travel in a file: no port request's `answered` verdict, no `response`.
const decision = decisionSchema
  .omit({ response: true })
  .extend({ verdict: z.enum(['approved', 'rejected', 'expired']) });
const body = z.object({
  schemaVersion: z.union([z.literal(1), z.literal(2)]),
  // The message count is the number of messages the file holds.
  session: sessionRecordSchema.omit({ messageCount: true }),
  // Seqs are the messages' positions.
  messages: z.array(storedMessageSchema.omit({ seq: true })),
  approvals: z.array(
    approvalRequestSchema
      .pick({
        id: true,
        callId: true,
        tool: true,
        argsJson: true,
        argsHash: true,
        effect: true,
        createdAt: true,
        expiresAt: true,
      })
      .extend({
        status: z.enum(['pending', 'approved', 'rejected', 'expired']),
        decision: decision.nullable(),
      })
      // Added later (the raiser; then edit and quorum: a bound preview, editable fields, a
      // quorum's state; the role a policy routed it to): files exported before have none.
      .extend(
        approvalRequestSchema
          .pick({
            raisedBy: true,
            effectHash: true,
            editable: true,
            approvalsNeeded: true,
            approvals: true,
            edit: true,
            revision: true,
            requiredRole: true,
          })
          .partial().shape,
      ),
  ),
  // The arguments are the approved request's; the session is the file's.
  executions: z.array(executionRecordSchema.omit({ session: true, args: true })),
});
type ExportBody = z.infer<typeof body>;
const signatureSchema = z.object({
  alg: z.literal('HMAC-SHA256'),
  keyId: z.string(),
  value: z.string().regex(/^[0-9a-f]{64}$/),
});
export type SessionExport = ExportBody & { digest: string; signature?: ExportSignature };

export interface SessionExportOptions {
  /** Signs the file with the keyring's signing key (`COUNTERSIGN_EXPORT_KEY` in the CLI). */
  keys?: ExportKeyring | undefined;
}

/**
 * A self-contained copy of a session, compact enough to mail around (a seed-scenario session
 * with one waiting request is well under 1.5 KB). The digest detects accidental edits; anyone
 * can recompute it. The HMAC signature, made when a key is given, is what an import trusts.
 */
export async function exportSession(
  store: Store,
  id: string,
  options: SessionExportOptions = {},
): Promise<SessionExport> {
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
    // Only tool calls move between stores; the export format names none of the fields a
    // port request adds, and the importing store's own rule fills them in.
    approvals: snapshot.approvals.map(
      ({
        args: _a,
        session: _s,
        agent: _g,
        kind: _k,
        run: _r,
        customer: _c,
        requiredRole: _q,
        // Who works on it and its nudges belong to the store it waits in, not to the conversation.
        claim: _m,
        escalatedTo: _e,
        nudges: _n,
        ...rest
      }) => {
        const { status, decision } = rest;
        if (status === 'answered' || decision?.verdict === 'answered')
          throw new Error(`request ${rest.id} of a session is answered like a port request`);
        return { ...rest, status, decision: decision && { ...decision, verdict: decision.verdict } };
      },
    ),
    executions: snapshot.executions.map(({ args: _a, session: _s, ...rest }) => rest),
  };
  const canonical = canonicalJson(exported);
  const signed = options.keys ? { signature: signExport(options.keys, canonical) } : {};
  return { ...exported, digest: sha256Hex(canonical), ...signed };
}

/** What the file holds, checked for shape and consistency, and what vouches for it. */
export interface ParsedSessionExport {
  snapshot: SessionSnapshot;
  /** Canonical JSON of the signed body, for checking the signature. */
  canonical: string;
  signature: ExportSignature | null;
}

/**
 * Refuses anything malformed or altered with INVALID_INPUT, and a request whose arguments no
 * longer hash to what was raised with INTEGRITY_VIOLATION (checkBinding), before writing a byte.
 */
export function parseSessionExport(
  input: unknown,
  options: { agents?: readonly string[] | undefined } = {},
): ParsedSessionExport {
  if (typeof input !== 'object' || input === null) throw invalid('the file does not hold a JSON object');
  const { digest, signature, ...rest } = input as Record<string, unknown>;
  if (typeof rest.schemaVersion !== 'number' || !READABLE_VERSIONS.includes(rest.schemaVersion)) {
    throw invalid(
      `schemaVersion ${JSON.stringify(rest.schemaVersion)} is not supported (expected one of ${READABLE_VERSIONS.join(', ')})`,
    );
  }
  const parsed = body.safeParse(rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`${issue?.path.join('.') || 'file'}: ${issue?.message ?? 'malformed'}`);
  }
  const data = parsed.data;
  checkNames(data, options.agents);
  const canonical = canonicalJson(data);
  if (typeof digest !== 'string' || digest !== sha256Hex(canonical)) {
    throw invalid('its digest does not match its content: the file was altered after export');
  }
  let checkedSignature: ExportSignature | null = null;
  if (signature !== undefined) {
    if (data.schemaVersion === 1) throw invalid('a schemaVersion 1 file cannot carry a signature');
    const shape = signatureSchema.safeParse(signature);
    if (!shape.success) throw invalid('its signature is malformed');
    checkedSignature = shape.data;
  }
  const approvals: ApprovalRequest[] = data.approvals.map((approval) => {
    if (Number.isNaN(Date.parse(approval.createdAt)) || Number.isNaN(Date.parse(approval.expiresAt))) {
      throw invalid(`request ${approval.id}: createdAt and expiresAt must be ISO 8601 times`);
    }
    if ((approval.status === 'pending') !== (approval.decision === null)) {
      throw invalid(`request ${approval.id}: its status ${approval.status} does not fit its decision`);
    }
    const args = JSON.parse(approval.argsJson) as JsonValue;
    // The digest only says the file is whole; a forger can recompute it, not the request's hash.
    checkBinding(
      toolCallBinding({
        id: approval.id,
        args,
        argsJson: approval.argsJson,
        argsHash: approval.argsHash,
        effect: approval.effect,
        effectHash: approval.effectHash ?? null,
        edit: approval.edit ?? null,
        decision: approval.decision,
      }),
      'importing',
    );
    return {
      // Files from before edit and quorum: an unbound preview, one approver, nothing editable.
      ...LEGACY_WAITING_FIELDS,
      ...approval,
      raisedBy: approval.raisedBy ?? null,
      kind: 'tool-call' as const,
      run: null,
      customer: data.session.principal,
      // Routed by the policy (a role by amount): kept, or a manager's request would lose its role.
      requiredRole: approval.requiredRole ?? null,
      claim: null,
      escalatedTo: null,
      nudges: null,
      session: data.session.id,
      agent: data.session.agent,
      args,
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
  for (const execution of data.executions) {
    if (byId.get(execution.requestId)?.status !== 'approved') {
      throw invalid(`ledger row ${execution.requestId} has no approved request in the file`);
    }
  }
  const snapshot: SessionSnapshot = {
    session: { ...data.session, messageCount: data.messages.length },
    messages: data.messages.map((stored, seq) => ({ seq, at: stored.at, message: stored.message })),
    approvals,
    executions: data.executions.map((execution) => ({
      ...execution,
      session: data.session.id,
      args: byId.get(execution.requestId)?.args ?? null,
    })),
  };
  // Before any plan is made from these times (planUnsignedImport restarts an expiry from
  // expiresAt − createdAt); the store's import checks the same again (guard.ts).
  assertSnapshotInstants(snapshot);
  return { snapshot, canonical, signature: checkedSignature };
}

/** Ids end up in URLs, file names and logs; the agent decides which tools a resume can run. */
function checkNames(data: ExportBody, agents: readonly string[] | undefined): void {
  const { id, agent } = data.session;
  if (!userIdPattern.test(id)) {
    throw invalid(
      `the session id ${JSON.stringify(id)} is not a valid session id (1 to 128 letters, digits and . _ : @ -, starting with a letter or digit)`,
    );
  }
  for (const approval of data.approvals) {
    if (!userIdPattern.test(approval.id)) {
      throw invalid(`the request id ${JSON.stringify(approval.id)} is not a valid request id`);
    }
  }
  if (agents !== undefined && !agents.includes(agent)) {
    throw new InvalidInputError(
      `Cannot import the session: it belongs to agent ${JSON.stringify(agent)}, which this app does not have (its agents: ${agents.join(', ') || 'none'}). Nothing was written.`,
      { hint: 'Import it where the app has that agent (COUNTERSIGN_APP names the app).' },
    );
  }
}

export interface SessionImportOptions {
  /** Who imports; named in the audit. */
  by?: string;
  /** Verifies signatures (`COUNTERSIGN_EXPORT_KEY` in the CLI). */
  keys?: ExportKeyring | undefined;
  /**
   * Import a file no configured key vouches for: its decided open-batch requests wait for a
   * person again and its ledger rows are left out (see planUnsignedImport).
   */
  trustUnsigned?: boolean;
  /** The agents of the app; a session of any other agent is refused. */
  agents?: readonly string[] | undefined;
  now?: () => Date;
}

export type SessionImportResult = ImportPlan;

export async function importSession(
  store: Store,
  input: unknown,
  options: SessionImportOptions = {},
): Promise<SessionImportResult> {
  const parsed = parseSessionExport(input, { agents: options.agents });
  const plan = trustPlan(parsed, options);
  await store.importSession(plan.snapshot, importAudit(plan, options.by ?? 'unknown'));
  return plan;
}

function trustPlan(parsed: ParsedSessionExport, options: SessionImportOptions): ImportPlan {
  const { signature, snapshot, canonical } = parsed;
  const check = signature ? checkSignature(options.keys, signature, canonical) : null;
  if (check?.kind === 'valid') return planSignedImport(snapshot, check.keyId);
  if (check?.kind === 'invalid') {
    throw new InvalidInputError(
      `Cannot import the session: its signature does not verify with key ${check.keyId}: the file was altered after export, or signed with another secret under that key id.`,
      {
        hint: 'Export it again with the same COUNTERSIGN_EXPORT_KEY in both stores and import the file unchanged.',
      },
    );
  }
  if (options.trustUnsigned) return planUnsignedImport(snapshot, options.now?.() ?? new Date());
  const why =
    check?.kind === 'unverifiable'
      ? `it is signed with key ${check.keyId}, which is not among the configured export keys`
      : 'the file is not signed';
  throw new InvalidInputError(
    `Cannot import the session: ${why}, so its decisions and ledger rows cannot be trusted. Nothing was written.`,
    {
      hint:
        'Set COUNTERSIGN_EXPORT_KEY to the key the exporting store signs with, or import with --trust-unsigned ' +
        '(trustUnsigned: true): every decided call still waiting to run then waits for a person again and the ledger rows are left out.',
    },
  );
}

function invalid(problem: string): InvalidInputError {
  return new InvalidInputError(`Cannot import the session: ${problem}. Nothing was written.`, {
    hint: 'Export it again with `countersign session export` and import the file unchanged.',
  });
}
