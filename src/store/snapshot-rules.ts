import type { ApprovalRequest, RequestNudges } from '../core/approval.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { assertStorableInstant, LAST_INSTANT } from '../core/instant.ts';
import { sessionSnapshotSchema } from './snapshot-schema.ts';
import type { SessionSnapshot } from './store.ts';

const IMPORT_HINT = `Import a snapshot exactly as exportSession produced it: every time in it is from 0000-01-01T00:00:00.000Z to ${LAST_INSTANT}.`;

const NUDGE_TIMES = [
  'remindAt',
  'remindedAt',
  'escalateAt',
  'escalatedAt',
  'expiringAt',
  'expiringSentAt',
] as const satisfies readonly (keyof RequestNudges)[];

/** Each time a request holds, named for the error: its own, its decision's, its quorum's, its edit's, its claim's and its nudges'. */
function requestInstants(request: ApprovalRequest): Array<[string, string]> {
  const times: Array<[string, string]> = [
    ['createdAt', request.createdAt],
    ['expiresAt', request.expiresAt],
  ];
  const { decision, edit, claim, nudges } = request;
  if (decision) {
    times.push(['decision.at', decision.at]);
    if (decision.edit) times.push(['decision.edit.at', decision.edit.at]);
    decision.approvals?.forEach((approval, i) => {
      times.push([`decision.approvals[${i}].at`, approval.at]);
    });
  }
  // Rows written before quorums have no approvals (legacy files read through LEGACY_WAITING_FIELDS).
  (request.approvals ?? []).forEach((approval, i) => {
    times.push([`approvals[${i}].at`, approval.at]);
  });
  if (edit) times.push(['edit.at', edit.at]);
  if (claim) times.push(['claim.until', claim.until]);
  for (const field of NUDGE_TIMES) {
    const value = nudges?.[field] ?? null;
    if (value !== null) times.push([`nudges.${field}`, value]);
  }
  return times;
}

/**
 * Every time an import writes must be one the stores can hold and order (core/instant.ts, the
 * one bound on stored times): the stores compare times as text, so a session `createdAt` or a
 * message `at` of `+010000-…` would sort before every date, and retention, stalled-session
 * sweeps and listings would misjudge it. Raising and deciding only ever write times of this
 * clock; an import writes whatever the file or caller held, so it is checked here, where
 * every backend's import passes (guard.ts), and by parseSessionExport before it plans anything
 * from those times. A time not in the UTC form (`+02:00`, no `.sss`) is refused, not
 * rewritten: the file's times are under its digest and signature, and exportSession only
 * ever writes the UTC form.
 */
export function assertSnapshotInstants(snapshot: SessionSnapshot): void {
  const { session, messages, approvals, executions } = snapshot;
  const check = (text: string, what: string) => assertStorableInstant(text, what, IMPORT_HINT);
  check(session.createdAt, `Session ${session.id}: createdAt`);
  check(session.updatedAt, `Session ${session.id}: updatedAt`);
  for (const message of messages) check(message.at, `Message ${message.seq} of session ${session.id}: at`);
  for (const request of approvals) {
    for (const [field, text] of requestInstants(request)) check(text, `Request ${request.id}: ${field}`);
  }
  for (const record of executions) {
    check(record.startedAt, `Ledger row ${record.requestId}: startedAt`);
    if (record.finishedAt !== null) check(record.finishedAt, `Ledger row ${record.requestId}: finishedAt`);
  }
}

/** `approvals.0.decision.at` as messages name a field: `approvals[0].decision.at` (here and audit-event-schema.ts). */
export function pathText(path: readonly PropertyKey[], whole = 'the snapshot itself'): string {
  let shown = '';
  for (const key of path) {
    if (typeof key === 'number') shown += `[${key}]`;
    else shown += shown === '' ? String(key) : `.${String(key)}`;
  }
  return shown || whole;
}

/**
 * What a store's importSession was handed, checked for shape (snapshot-schema.ts) before
 * anything reads it: a library caller's object is typed only at compile time, and an array
 * where an object belongs or a missing field would otherwise surface deep in a backend as a
 * TypeError, or be written as it is. Returns the input itself, not zod's copy: the check
 * judges, and what is written stays what the caller handed over.
 */
export function readSnapshot(input: unknown): SessionSnapshot {
  const parsed = sessionSnapshotSchema.safeParse(input);
  if (parsed.success) return input as SessionSnapshot;
  const issue = parsed.error.issues[0];
  // Some issues (jsonValue's) are sentences already.
  const problem = (issue?.message ?? 'malformed').replace(/\.$/, '');
  const session = (input as { session?: { id?: unknown } } | null)?.session?.id;
  const which = typeof session === 'string' ? `of session ${session} ` : '';
  throw new InvalidInputError(
    `The snapshot ${which}to import is malformed: ${pathText(issue?.path ?? [])}: ${problem}. Nothing was written.`,
    {
      hint: 'Pass a SessionSnapshot as store.exportSession returns it; to import an export file, use importSession from countersign, which reads the file format.',
    },
  );
}

/**
 * An import must leave the session as a run would have: contiguous message seqs matching
 * the count, every request and ledger row belonging to the session being imported, and
 * every time one the stores can hold (assertSnapshotInstants). Its shape is readSnapshot's.
 */
export function assertSnapshotConsistent(snapshot: SessionSnapshot): void {
  const { session, messages, approvals, executions } = snapshot;
  const problem = (detail: string) =>
    new InvalidInputError(`The snapshot of session ${session.id} is inconsistent: ${detail}.`, {
      hint: 'Import a snapshot exactly as exportSession produced it.',
    });
  if (session.messageCount !== messages.length) {
    throw problem(`messageCount is ${session.messageCount} but it holds ${messages.length} messages`);
  }
  messages.forEach((message, index) => {
    if (message.seq !== index) throw problem(`message ${index} has seq ${message.seq}`);
  });
  for (const approval of approvals) {
    if (approval.session !== session.id) {
      throw problem(`request ${approval.id} belongs to ${approval.session}`);
    }
  }
  for (const execution of executions) {
    if (execution.session !== session.id) {
      throw problem(`ledger row ${execution.requestId} belongs to ${execution.session}`);
    }
  }
  assertSnapshotInstants(snapshot);
}
