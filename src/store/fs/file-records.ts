import type { ApprovalRequest, Decision, RequestKind } from '../../core/approval.ts';
import { canonicalJson } from '../../core/canonical-json.ts';
import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import type { JsonValue } from '../../core/json.ts';
import { isErased } from '../../crypto/erased.ts';
import { requestScope, runScope, STORE_SCOPE } from '../../crypto/scopes.ts';
import { RUN_STATUSES, type RunStatus, type StoredCheckpoint } from '../checkpoint-store.ts';
import type { LegacyAnswer } from '../legacy-requests.ts';
import type { FileSealing } from './file-sealing.ts';

/** One line of index.jsonl. */
export interface IndexLine {
  run: string;
  checkpoint: string;
  file: string;
  parent: string | null;
}

const runStatuses: readonly string[] = RUN_STATUSES;

function damaged(path: string, detail: string, cause?: unknown): CorruptDataError {
  return new CorruptDataError(`The file ${path} is damaged: ${detail}.`, {
    hint: 'Restore it from a backup or remove it; nothing was changed.',
    cause,
  });
}

function parseObject(text: string, path: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw damaged(
      path,
      text.trim() === ''
        ? 'it is empty'
        : `it is not valid JSON (truncated or edited?): ${(cause as Error).message}`,
      cause,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw damaged(path, 'it does not hold a JSON object');
  }
  return value as Record<string, unknown>;
}

function field<T>(
  record: Record<string, unknown>,
  name: string,
  path: string,
  check: (value: unknown) => boolean,
): T {
  const value = record[name];
  if (!check(value)) throw damaged(path, `field "${name}" is missing or has the wrong type`);
  return value as T;
}

const isString = (value: unknown) => typeof value === 'string';
const isStringOrNull = (value: unknown) => value === null || typeof value === 'string';
const isCount = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** A checkpoint file's id, from its clear header: what a save compares, without unsealing. */
export function checkpointFileId(text: string, path: string): string {
  return field(parseObject(text, path), 'id', path, isString);
}

export function parseCheckpointFile(text: string, path: string, sealing: FileSealing): StoredCheckpoint {
  const record = parseObject(text, path);
  if ('bodySealed' in record) record.body = sealing.open(field(record, 'bodySealed', path, isString), path);
  if (!('body' in record)) throw damaged(path, 'field "body" is missing');
  return {
    id: field(record, 'id', path, isString),
    run: field(record, 'run', path, isString),
    seq: field(record, 'seq', path, isCount),
    parent: field(record, 'parent', path, isStringOrNull),
    superstep: field(record, 'superstep', path, isCount),
    createdAt: field(record, 'createdAt', path, isString),
    workflow: field(record, 'workflow', path, isString),
    version: field(record, 'version', path, isCount),
    status: field<RunStatus>(record, 'status', path, (value) => runStatuses.includes(value as string)),
    // Clear beside the sealed body; files written before it have none (checkpointCustomer).
    ...('customer' in record
      ? { customer: field<string | null>(record, 'customer', path, isStringOrNull) }
      : {}),
    body: record.body as JsonValue,
  };
}

/** A checkpoint file's text: its body sealed under the run's key when the store encrypts. */
export function checkpointFileText(checkpoint: StoredCheckpoint, sealing: FileSealing): string {
  if (!sealing.sealed) return `${JSON.stringify(checkpoint)}\n`;
  const { body, ...clear } = checkpoint;
  return `${JSON.stringify({ ...clear, bodySealed: sealing.seal(body, runScope(checkpoint.run)) })}\n`;
}

/** An answer file written before port requests were rows (runs/<run>/answers/<request>.json). */
export function parseAnswerFile(text: string, path: string): LegacyAnswer {
  const record = parseObject(text, path);
  if (!('response' in record)) throw damaged(path, 'field "response" is missing');
  return {
    requestId: field(record, 'requestId', path, isString),
    response: record.response as JsonValue,
    by: field(record, 'by', path, isString),
    at: field(record, 'at', path, isString),
    expired:
      field<boolean | undefined>(
        record,
        'expired',
        path,
        (value) => value === undefined || typeof value === 'boolean',
      ) === true,
  };
}

const requestKinds: readonly string[] = ['tool-call', 'port'] satisfies RequestKind[];

/**
 * A request file (requests/<id>.json) as raised: always pending, never rewritten. Its
 * canonical text is rebuilt from `args`, so an edited payload no longer matches `argsHash`.
 */
export function parseRequestFile(text: string, path: string, sealing: FileSealing): ApprovalRequest {
  const record = parseObject(text, path);
  if ('argsSealed' in record) record.args = sealing.open(field(record, 'argsSealed', path, isString), path);
  if ('effectSealed' in record)
    record.effect = sealing.openText(field(record, 'effectSealed', path, isString), path);
  if (!('args' in record)) throw damaged(path, 'field "args" is missing');
  const args = record.args as JsonValue;
  let argsJson: string;
  try {
    argsJson = canonicalJson(args);
  } catch (cause) {
    throw damaged(path, 'field "args" has no canonical JSON form', cause);
  }
  return {
    id: field(record, 'id', path, isString),
    kind: field(record, 'kind', path, (value) => requestKinds.includes(value as string)),
    session: field(record, 'session', path, isString),
    run: field(record, 'run', path, isStringOrNull),
    agent: field(record, 'agent', path, isString),
    callId: field(record, 'callId', path, isString),
    tool: field(record, 'tool', path, isString),
    args,
    argsJson,
    argsHash: field(record, 'argsHash', path, isString),
    effect: field(record, 'effect', path, isString),
    createdAt: field(record, 'createdAt', path, isString),
    expiresAt: field(record, 'expiresAt', path, isString),
    status: 'pending',
    decision: null,
    raisedBy: field(record, 'raisedBy', path, isStringOrNull),
    customer: field(record, 'customer', path, isStringOrNull),
    requiredRole: field(record, 'requiredRole', path, isStringOrNull),
    // Files are written once and never rewritten: the file store keeps no claims or nudges.
    claim: null,
    escalatedTo: null,
    nudges: null,
    // Files written before previews were bound and quorums existed: unbound preview, one approver.
    effectHash: 'effectHash' in record ? field(record, 'effectHash', path, isStringOrNull) : null,
    editable:
      'editable' in record
        ? field<string[]>(record, 'editable', path, (value) => Array.isArray(value) && value.every(isString))
        : [],
    approvalsNeeded: 'approvalsNeeded' in record ? field(record, 'approvalsNeeded', path, isCount) : 1,
    approvals: [],
    edit: null,
    revision: 0,
  };
}

/**
 * The text of a request file: the row as raised, without its status or what partial
 * approvals change (see parseRequestFile and parseApprovalFile).
 */
export function requestFileText(request: ApprovalRequest, sealing: FileSealing): string {
  const {
    status: _status,
    decision: _decision,
    argsJson: _argsJson,
    claim: _claim,
    escalatedTo: _escalatedTo,
    nudges: _nudges,
    approvals: _approvals,
    edit: _edit,
    revision: _revision,
    ...raised
  } = request;
  if (!sealing.sealed) return `${JSON.stringify(raised)}\n`;
  const { args, effect, ...clear } = raised;
  const scope = requestScope(request);
  return `${JSON.stringify({ ...clear, argsSealed: sealing.seal(args, scope), effectSealed: sealing.sealText(effect, scope) })}\n`;
}

/**
 * A partial approval file (requests/<id>.r<revision>.json): created once per revision, the
 * compare-and-set of recordApproval. The highest revision present is the row's state.
 */
export function parseApprovalFile(
  text: string,
  path: string,
  sealing: FileSealing,
): Pick<ApprovalRequest, 'approvals' | 'edit' | 'requiredRole' | 'approvalsNeeded'> {
  const record = parseObject(text, path);
  if ('sealed' in record) {
    const opened = sealing.open(field(record, 'sealed', path, isString), path);
    // Erased (the customer's key destroyed): who approved and what they edited are gone.
    Object.assign(record, isErased(opened) ? { approvals: [], edit: null } : opened);
  }
  return {
    approvals: field(record, 'approvals', path, Array.isArray) as ApprovalRequest['approvals'],
    edit: (record.edit ?? null) as ApprovalRequest['edit'],
    requiredRole: field(record, 'requiredRole', path, isStringOrNull),
    approvalsNeeded: field(record, 'approvalsNeeded', path, isCount),
  };
}

type ApprovalState = Pick<ApprovalRequest, 'approvals' | 'edit' | 'requiredRole' | 'approvalsNeeded'>;

/** A partial approval file's text: who approved and the edit sealed under the request's key. */
export function approvalFileText(state: ApprovalState, scope: string, sealing: FileSealing): string {
  const { approvals, edit, requiredRole, approvalsNeeded } = state;
  if (!sealing.sealed) return `${JSON.stringify({ approvals, edit, requiredRole, approvalsNeeded })}\n`;
  return `${JSON.stringify({ requiredRole, approvalsNeeded, sealed: sealing.seal({ approvals, edit }, scope) })}\n`;
}

/**
 * A decision file's text: the verdict, who and when stay clear (the status is read from
 * them); the reason, the answer, the edit and the approvals are sealed under the request's key.
 */
export function decisionFileText(decision: Decision, scope: string, sealing: FileSealing): string {
  if (!sealing.sealed) return `${JSON.stringify(decision)}\n`;
  const { verdict, by, at, kind, ...payload } = decision;
  return `${JSON.stringify({ verdict, by, at, kind, sealed: sealing.seal(payload, scope) })}\n`;
}

const verdicts: readonly string[] = ['approved', 'rejected', 'answered', 'expired'];

/** A decision file (requests/<id>.decision.json): created once, the request's compare-and-set. */
export function parseDecisionFile(text: string, path: string, sealing: FileSealing): Decision {
  const record = parseObject(text, path);
  if ('sealed' in record) {
    const opened = sealing.open(field(record, 'sealed', path, isString), path);
    delete record.sealed;
    Object.assign(record, isErased(opened) ? { reason: null } : opened);
  }
  return {
    verdict: field(record, 'verdict', path, (value) => verdicts.includes(value as string)),
    by: field(record, 'by', path, isString),
    reason: field(record, 'reason', path, isStringOrNull),
    at: field(record, 'at', path, isString),
    kind: field(record, 'kind', path, isString),
    ...('response' in record ? { response: record.response as JsonValue } : {}),
    ...('edit' in record ? { edit: record.edit as unknown as NonNullable<Decision['edit']> } : {}),
    ...('approvals' in record
      ? { approvals: record.approvals as unknown as NonNullable<Decision['approvals']> }
      : {}),
  };
}

export function parseStateFile(text: string, path: string, sealing: FileSealing): JsonValue {
  const record = parseObject(text, path);
  if ('valueSealed' in record)
    record.value = sealing.open(field(record, 'valueSealed', path, isString), path);
  if (!('value' in record)) throw damaged(path, 'field "value" is missing');
  return record.value as JsonValue;
}

/** An application-state file's text: the value sealed under the store's key (no one customer's). */
export function stateFileText(
  namespace: string,
  key: string,
  value: JsonValue,
  sealing: FileSealing,
): string {
  if (!sealing.sealed) return `${JSON.stringify({ namespace, key, value })}\n`;
  return `${JSON.stringify({ namespace, key, valueSealed: sealing.seal(value, STORE_SCOPE) })}\n`;
}

/**
 * Reads index.jsonl. Lines written twice (a retried append) are kept once. A line that
 * does not parse is reported with its number rather than skipped: the index is never
 * edited, so a bad line means damage a person should look at.
 */
export function parseIndex(text: string, path: string): IndexLine[] {
  const seen = new Set<string>();
  const lines: IndexLine[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const where = `${path} (line ${index + 1})`;
    const record = parseObject(raw, where);
    const line: IndexLine = {
      run: field(record, 'run', where, isString),
      checkpoint: field(record, 'checkpoint', where, isString),
      file: field(record, 'file', where, isString),
      parent: field(record, 'parent', where, isStringOrNull),
    };
    const key = `${line.run}\n${line.checkpoint}`;
    if (seen.has(key)) return;
    seen.add(key);
    lines.push(line);
  });
  return lines;
}
