import { hash } from 'node:crypto';
import { InvalidInputError } from './errors/invalid-input-error.ts';
import type { JsonValue } from './json.ts';
import { MAX_JSON_DEPTH, tooDeepMessage } from './json-depth.ts';
import { jsonEscape, revealInvisible } from './visible-text.ts';

/**
 * How deeply canonicalJson follows a value. Inputs are held to MAX_JSON_DEPTH; what is
 * canonicalized wraps them (an audit entry around a decision's extras, a session export
 * around its messages' arguments), so this allows four times as much, and stops well before
 * the stack would.
 */
export const MAX_CANONICAL_DEPTH = 4 * MAX_JSON_DEPTH;

/**
 * Canonical JSON (sorted keys, no whitespace, JSON.stringify's escaping of strings and
 * numbers). Two calls with the same arguments in any key order get the same text and
 * therefore the same hash — the hash is what a decision is bound to. A value nested deeper
 * than MAX_CANONICAL_DEPTH is INVALID_INPUT, never a stack overflow.
 */
export function canonicalJson(value: unknown): string {
  return write(value, 0);
}

function write(value: unknown, depth: number): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError('canonicalJson: non-finite numbers have no JSON form');
    }
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
      throw new TypeError(`canonicalJson: ${typeof value} has no JSON form`);
    }
    return JSON.stringify(value);
  }
  if (depth >= MAX_CANONICAL_DEPTH)
    throw new InvalidInputError(tooDeepMessage('A JSON value', MAX_CANONICAL_DEPTH));
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? 'null' : write(item, depth + 1))).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${write(record[key], depth + 1)}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  // The one-shot form: about twice as fast as createHash for short texts, and it runs per audit entry.
  return hash('sha256', text, 'hex');
}

/** The pair stored with every approval request: the exact text shown and its digest. */
export function bindArgs(args: JsonValue): { argsJson: string; argsHash: string } {
  const argsJson = canonicalJson(args);
  return { argsJson, argsHash: sha256Hex(argsJson) };
}

/**
 * JSON for people: non-ASCII kept readable, but line breaks and other control characters
 * escaped so an argument can never start a line of its own on a console or in a log.
 */
export function readableJson(value: unknown): string {
  // Only inside strings (canonical JSON has no whitespace), where \uXXXX keeps it valid JSON.
  return revealInvisible(canonicalJson(value), jsonEscape);
}
