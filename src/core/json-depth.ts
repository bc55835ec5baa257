/**
 * How deeply JSON from outside may nest: request bodies, CLI arguments, imported sessions,
 * run inputs and port responses. Real arguments nest a handful of levels; the limit keeps
 * every recursive walk over them (validation, hashing, display) far from the stack's end.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * True when arrays and objects nest more than `limit` levels (`[]` is one level, `[[]]`
 * two). Walks with its own stack, so it cannot overflow however deep the value is, and
 * stops at the first branch past the limit (which also ends cycles).
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const node = values.pop()!;
    const depth = depths.pop()!;
    if (depth > limit) return true;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The sentence every refusal uses, so the API, the CLI and the inbox say the same. */
export function tooDeepMessage(what: string, limit = MAX_JSON_DEPTH): string {
  return `${what} nests deeper than ${limit} levels of arrays and objects; flatten it.`;
}
