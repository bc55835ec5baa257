import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import type { JsonValue } from '../../core/json.ts';
import {
  type RequestAnswer,
  RUN_STATUSES,
  type RunStatus,
  type StoredCheckpoint,
} from '../checkpoint-store.ts';

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

export function parseCheckpointFile(text: string, path: string): StoredCheckpoint {
  const record = parseObject(text, path);
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
    body: record.body as JsonValue,
  };
}

export function parseAnswerFile(text: string, path: string): RequestAnswer {
  const record = parseObject(text, path);
  if (!('response' in record)) throw damaged(path, 'field "response" is missing');
  return {
    run: field(record, 'run', path, isString),
    requestId: field(record, 'requestId', path, isString),
    response: record.response as JsonValue,
    by: field(record, 'by', path, isString),
    at: field(record, 'at', path, isString),
    ...(field<boolean | undefined>(
      record,
      'expired',
      path,
      (value) => value === undefined || typeof value === 'boolean',
    )
      ? { expired: true }
      : {}),
  };
}

export function parseStateFile(text: string, path: string): JsonValue {
  const record = parseObject(text, path);
  if (!('value' in record)) throw damaged(path, 'field "value" is missing');
  return record.value as JsonValue;
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
