import type { JsonValue } from './json.ts';

/** A value as plain JSON, or why it has no JSON form. */
export type PlainJson = { ok: true; json: JsonValue } | { ok: false; problem: string };

/**
 * `value` as SQLite and PostgreSQL read it back once stored as JSON text, so the memory
 * backends can keep the same: taken as `JSON.stringify` takes it (`toJSON`, so a Date is its
 * ISO text; `undefined`, functions and symbols left out of objects and `null` in arrays;
 * non-finite numbers `null`), except that a bigint becomes its decimal text instead of an
 * error. What has no JSON form at all is a problem, said in words: `undefined`, a function or
 * a symbol by itself, a cycle, a `toJSON` that throws, a nesting too deep for the stack.
 */
export function plainJson(value: unknown): PlainJson {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, item: unknown) =>
      typeof item === 'bigint' ? item.toString() : item,
    );
  } catch (error) {
    return { ok: false, problem: whyNot(error) };
  }
  if (text === undefined) return { ok: false, problem: `${String(typeof value)} has no JSON form` };
  return { ok: true, json: JSON.parse(text) as JsonValue };
}

function whyNot(error: unknown): string {
  if (error instanceof RangeError) return 'it nests too deeply';
  if (error instanceof TypeError && /circular/i.test(error.message)) return 'it refers to itself (a cycle)';
  return `turning it into JSON failed (${error instanceof Error ? error.message : String(error)})`;
}
