import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';

/**
 * The fingerprint of a payload schema recorded in every checkpoint: a hash of its JSON
 * Schema (as accepted input), so equal hashes mean stored payloads need no re-checking.
 * Refinements and transforms have no JSON Schema form and do not change the hash.
 */
export function schemaHash(schema: z.ZodType): string {
  const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return sha256Hex(canonicalJson(json)).slice(0, 16);
}

/** "field orderId: expected number" from the first zod issue, and the field's dotted path. */
export function describeIssue(error: z.ZodError): { field: string | null; detail: string } {
  const issue = error.issues[0];
  if (issue === undefined) return { field: null, detail: 'the value does not match its schema' };
  const field = issue.path.length === 0 ? null : issue.path.map(String).join('.');
  return { field, detail: field === null ? issue.message : `field "${field}": ${issue.message}` };
}
