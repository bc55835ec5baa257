import { type ApprovalRequest, type Decision, EXPIRED_REASON } from '../core/approval.ts';
import { bindArgs } from '../core/canonical-json.ts';
import type { JsonValue } from '../core/json.ts';
import { defaultPortEffect, NEVER_EXPIRES, runSessionOf } from '../core/port-effect.ts';
import { waitingFields } from '../core/request-defaults.ts';
import type { StoredCheckpoint } from './checkpoint-store.ts';
import type { PayloadCodec } from './codec.ts';
import { payload, text } from './row-readers.ts';

/** An answer as the `workflow_answers` table (or a file store's answers/) recorded it before requests were rows. */
export interface LegacyAnswer {
  requestId: string;
  response: JsonValue;
  by: string;
  at: string;
  expired: boolean;
}

type Loose = Record<string, unknown>;
const isRecord = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const textOr = (value: unknown, fallback: string | null): string | null =>
  typeof value === 'string' ? value : fallback;

function decisionOf(answer: LegacyAnswer): Decision {
  return answer.expired
    ? { verdict: 'expired', by: 'countersign', reason: EXPIRED_REASON, at: answer.at, kind: 'expiry' }
    : {
        verdict: 'answered',
        by: answer.by,
        reason: null,
        at: answer.at,
        kind: 'person',
        response: answer.response,
      };
}

/** A row adopted with the answer recorded for it before requests were rows. */
export function withLegacyAnswer(row: ApprovalRequest, answer: LegacyAnswer): ApprovalRequest {
  const decision = decisionOf(answer);
  return { ...row, status: decision.verdict, decision };
}

/**
 * The rows for the pending port requests of a checkpoint written before port requests were
 * rows, with the answer already recorded for one (if any) as its decision. Read loosely and
 * without workflow code: stores adopt them when they open, and what does not read as a
 * countersign checkpoint is left for whoever resumes the run to report. The hash is computed
 * now, from the checkpoint as it stands.
 */
export function legacyRequestRows(
  checkpoint: StoredCheckpoint,
  answers: ReadonlyMap<string, LegacyAnswer>,
): ApprovalRequest[] {
  const body = checkpoint.body;
  if (!isRecord(body) || !isRecord(body.state) || !Array.isArray(body.state.requests)) return [];
  const origin = isRecord(body.state.origin) ? body.state.origin : {};
  const rows: ApprovalRequest[] = [];
  for (const pending of body.state.requests) {
    if (!isRecord(pending) || typeof pending.id !== 'string' || typeof pending.port !== 'string') continue;
    if (typeof pending.createdAt !== 'string' || pending.data === undefined) continue;
    const parties = isRecord(pending.parties) ? pending.parties : undefined;
    const data = pending.data as JsonValue;
    const answer = answers.get(pending.id);
    const decision = answer === undefined ? null : decisionOf(answer);
    const effect = defaultPortEffect(pending.port, checkpoint.workflow, checkpoint.run);
    rows.push({
      id: pending.id,
      kind: 'port',
      session: runSessionOf(checkpoint.run),
      run: checkpoint.run,
      agent: checkpoint.workflow,
      callId: textOr(pending.askedBy, pending.port) ?? pending.port,
      tool: pending.port,
      args: data,
      ...bindArgs(data),
      effect,
      createdAt: pending.createdAt,
      expiresAt: textOr(pending.expiresAt, NEVER_EXPIRES) ?? NEVER_EXPIRES,
      status: decision === null ? 'pending' : decision.verdict,
      decision,
      raisedBy: parties ? textOr(parties.raisedBy, null) : textOr(origin.by, null),
      customer: parties ? textOr(parties.customer, null) : textOr(origin.customer, null),
      requiredRole: parties ? textOr(parties.requiredRole, null) : null,
      claim: null,
      escalatedTo: null,
      nudges: null,
      ...waitingFields(effect),
    });
  }
  return rows;
}

/**
 * The rows to adopt for one run: every pending request of its latest checkpoint, and every
 * request an answer was recorded for that an earlier checkpoint waited on (answered and
 * applied already: its row says so, so a later answer is ALREADY_DECIDED, not NOT_FOUND).
 * `newestFirst` is the run's checkpoints, its latest first; only the latest is needed when
 * the run has no answers. Checkpoints that do not read as countersign's are skipped.
 */
export function legacyRunRows(
  newestFirst: readonly StoredCheckpoint[],
  answers: ReadonlyMap<string, LegacyAnswer>,
): ApprovalRequest[] {
  const rows = new Map<string, ApprovalRequest>();
  for (const [index, checkpoint] of newestFirst.entries()) {
    let found: ApprovalRequest[];
    try {
      found = legacyRequestRows(checkpoint, answers);
    } catch {
      continue;
    }
    for (const row of found) {
      if (rows.has(row.id) || (index > 0 && row.decision === null)) continue;
      rows.set(row.id, row);
    }
    if ([...answers.keys()].every((id) => rows.has(id))) break;
  }
  return [...rows.values()];
}

/**
 * The rows of the retired `workflow_answers` table, by run and request id, as both SQL
 * backends read them before adopting (SQLite stores `expired` as 0/1, PostgreSQL as boolean).
 */
export function legacyAnswersByRun(
  codec: PayloadCodec,
  rows: readonly Record<string, unknown>[],
): Map<string, Map<string, LegacyAnswer>> {
  const answers = new Map<string, Map<string, LegacyAnswer>>();
  for (const row of rows) {
    const where = `workflow_answers(run=${String(row.run)}, request_id=${String(row.request_id)})`;
    const run = text(row, 'run', where);
    let byRun = answers.get(run);
    if (byRun === undefined) {
      byRun = new Map();
      answers.set(run, byRun);
    }
    const requestId = text(row, 'request_id', where);
    byRun.set(requestId, {
      requestId,
      response: payload(codec, row, 'response', where) as LegacyAnswer['response'],
      by: text(row, 'answered_by', where),
      at: text(row, 'answered_at', where),
      expired: row.expired === true || Number(row.expired) === 1,
    });
  }
  return answers;
}
