import { type ApprovalRequest, type Decision, EXPIRED_REASON } from '../core/approval.ts';
import { bindArgs } from '../core/canonical-json.ts';
import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { parseInstant } from '../core/instant.ts';
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

const ADOPT_HINT =
  'No request was adopted and nothing was removed: the old rows (workflow_checkpoints, workflow_answers) stay as they are, and the store will not open until the time is corrected. ' +
  'Set it to the instant it meant, in UTC as YYYY-MM-DDTHH:MM:SS.sssZ (or ISO-8601 with its zone, such as 2026-12-01T10:30:00+01:00, which is taken as that instant), then open the store again.';

function adoptionRefused(problem: string, cause?: unknown): CorruptDataError {
  return new CorruptDataError(
    `Cannot adopt the waiting requests of runs written before requests were rows: ${problem}`,
    { hint: ADOPT_HINT, cause },
  );
}

/** A value that should have been a time, for a message: short, and never a walk of what it holds. */
function shownValue(value: unknown): string {
  if (value === undefined) return 'missing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/**
 * A time of a legacy row as the request table must hold it: the one UTC form stores compare
 * as text, within the years 0000-9999 (core/instant.ts). Every other write path refuses any
 * other form; these rows were written by older versions (or edited since), so what names
 * one instant without guessing (an explicit zone or offset, a six-digit year, no
 * milliseconds) is rewritten to that instant's UTC form by parseInstant, the rule for times
 * handed in. What does not (no zone: the host's local time of some past server; a day its
 * month does not have; past 9999; not text) is refused, naming the row: adopting it as
 * written would misorder every expiry and listing, and skipping it would drop its answer
 * with workflow_answers.
 */
function adoptedInstant(value: unknown, where: string): string {
  if (typeof value !== 'string') throw adoptionRefused(`${where} is ${shownValue(value)}, not a time.`);
  try {
    // No hint of parseInstant's own: the refusal's says what to do here.
    return parseInstant(value, where, '');
  } catch (error) {
    if (!CountersignError.is(error)) throw error;
    throw adoptionRefused(error.message, error);
  }
}

function decisionOf(answer: LegacyAnswer): Decision {
  const { at } = answer;
  return answer.expired
    ? { verdict: 'expired', by: 'countersign', reason: EXPIRED_REASON, at, kind: 'expiry' }
    : {
        verdict: 'answered',
        by: answer.by,
        reason: null,
        at,
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
 * A port request as a checkpoint written before requests were rows holds it, read loosely
 * (an id, a port and a payload make it one); its times as written, checked on adoption.
 */
interface LegacyPending {
  /** Its place in the checkpoint's `state.requests`, for a message. */
  index: number;
  id: string;
  port: string;
  data: JsonValue;
  askedBy: unknown;
  parties: Loose | undefined;
  createdAt: unknown;
  expiresAt: unknown;
}

/** What does not read as a countersign checkpoint gives none: whoever resumes the run reports it. */
function pendingRequests(checkpoint: StoredCheckpoint): LegacyPending[] {
  const body = checkpoint.body;
  if (!isRecord(body) || !isRecord(body.state) || !Array.isArray(body.state.requests)) return [];
  const found: LegacyPending[] = [];
  for (const [index, pending] of body.state.requests.entries()) {
    if (!isRecord(pending) || typeof pending.id !== 'string' || typeof pending.port !== 'string') continue;
    if (pending.data === undefined) continue;
    found.push({
      index,
      id: pending.id,
      port: pending.port,
      data: pending.data as JsonValue,
      askedBy: pending.askedBy,
      parties: isRecord(pending.parties) ? pending.parties : undefined,
      createdAt: pending.createdAt,
      expiresAt: pending.expiresAt,
    });
  }
  return found;
}

/** A legacy request's times as its row holds them, and its answer with its time so. */
interface AdoptedTimes {
  createdAt: string;
  expiresAt: string;
  answer: LegacyAnswer | undefined;
}

/** Every time a legacy request's row takes, in the stored form, or CORRUPT_DATA naming where it is. */
function adoptedTimes(
  checkpoint: StoredCheckpoint,
  pending: LegacyPending,
  answer: LegacyAnswer | undefined,
): AdoptedTimes {
  const where = (field: string) =>
    `request ${pending.id} (run ${checkpoint.run}, checkpoint ${checkpoint.id}, body state.requests[${pending.index}].${field})`;
  return {
    createdAt: adoptedInstant(pending.createdAt, where('createdAt')),
    // Absent or null: written before requests expired, so it never does.
    expiresAt:
      pending.expiresAt === undefined || pending.expiresAt === null
        ? NEVER_EXPIRES
        : adoptedInstant(pending.expiresAt, where('expiresAt')),
    answer: answer && {
      ...answer,
      at: adoptedInstant(
        answer.at,
        `the answer to request ${pending.id} (workflow_answers row of run ${checkpoint.run}, answered_at)`,
      ),
    },
  };
}

/** The row for one legacy request, with its answer (if any) as its decision; the hash is computed now. */
function requestRow(
  checkpoint: StoredCheckpoint,
  pending: LegacyPending,
  times: AdoptedTimes,
): ApprovalRequest {
  const state = isRecord(checkpoint.body) ? checkpoint.body.state : undefined;
  const origin = isRecord(state) && isRecord(state.origin) ? state.origin : {};
  const { parties, data } = pending;
  const decision = times.answer === undefined ? null : decisionOf(times.answer);
  const effect = defaultPortEffect(pending.port, checkpoint.workflow, checkpoint.run);
  return {
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
    createdAt: times.createdAt,
    expiresAt: times.expiresAt,
    status: decision === null ? 'pending' : decision.verdict,
    decision,
    raisedBy: parties ? textOr(parties.raisedBy, null) : textOr(origin.by, null),
    customer: parties ? textOr(parties.customer, null) : textOr(origin.customer, null),
    requiredRole: parties ? textOr(parties.requiredRole, null) : null,
    claim: null,
    escalatedTo: null,
    nudges: null,
    ...waitingFields(effect),
  };
}

/**
 * The rows for the pending port requests of a checkpoint written before port requests were
 * rows, with the answer already recorded for one (if any) as its decision. Read loosely and
 * without workflow code: stores adopt them when they open, and what does not read as a
 * countersign checkpoint is left for whoever resumes the run to report. The hash is computed
 * now, from the checkpoint as it stands; the times are the stored form (adoptedInstant).
 */
export function legacyRequestRows(
  checkpoint: StoredCheckpoint,
  answers: ReadonlyMap<string, LegacyAnswer>,
): ApprovalRequest[] {
  return pendingRequests(checkpoint).map((pending) =>
    requestRow(checkpoint, pending, adoptedTimes(checkpoint, pending, answers.get(pending.id))),
  );
}

/**
 * The rows to adopt for one run: every pending request of its latest checkpoint, and every
 * request an answer was recorded for that an earlier checkpoint waited on (answered and
 * applied already: its row says so, so a later answer is ALREADY_DECIDED, not NOT_FOUND).
 * `newestFirst` is the run's checkpoints, its latest first; only the latest is needed when
 * the run has no answers. A checkpoint that does not read as countersign's is skipped; a
 * request to adopt whose time cannot be stored refuses the adoption (CORRUPT_DATA), since
 * skipping it would lose its answer with the table. Only the requests adopted are judged:
 * an earlier checkpoint's unanswered ones are not adopted, so their times do not matter.
 */
export function legacyRunRows(
  newestFirst: readonly StoredCheckpoint[],
  answers: ReadonlyMap<string, LegacyAnswer>,
): ApprovalRequest[] {
  const rows = new Map<string, ApprovalRequest>();
  for (const [index, checkpoint] of newestFirst.entries()) {
    const adopted = pendingRequests(checkpoint).filter(
      (pending) => !rows.has(pending.id) && (index === 0 || answers.has(pending.id)),
    );
    // Outside the try below: a bad time is refused, never taken for an unreadable checkpoint.
    const timed = adopted.map((pending) => ({
      pending,
      times: adoptedTimes(checkpoint, pending, answers.get(pending.id)),
    }));
    let found: ApprovalRequest[];
    try {
      found = timed.map(({ pending, times }) => requestRow(checkpoint, pending, times));
    } catch {
      continue;
    }
    // A request listed twice in one checkpoint: the first, as before.
    for (const row of found) if (!rows.has(row.id)) rows.set(row.id, row);
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
