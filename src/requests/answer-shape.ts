import type { JsonValue } from '../core/json.ts';

/** A port's response schema as JSON Schema (what `z.toJSONSchema` gives). */
export type ResponseSchema = { [key: string]: JsonValue };

interface Property {
  type?: unknown;
}

/**
 * Whether a port's answer is shaped like an approval: `{ approved: boolean }` plus string
 * fields only. Such a port can be approved and rejected like a tool call (the inbox's two
 * buttons, `countersign approve|reject`); any other port takes its answer as JSON.
 */
export function approvalFields(schema: ResponseSchema): string[] | null {
  const properties = (schema.properties ?? {}) as unknown as Record<string, Property>;
  const names = Object.keys(properties);
  if (properties.approved?.type !== 'boolean') return null;
  if (!names.every((name) => name === 'approved' || properties[name]?.type === 'string')) return null;
  return names.filter((name) => name !== 'approved');
}

/**
 * The answer an approve or reject stands for on an approval-shaped port: `approved`, and the
 * person's reason in the port's one text field (`reason` when there are several). Null when
 * the port is not approval-shaped; the answer must then be given as JSON.
 */
export function approvalAnswer(
  schema: ResponseSchema,
  approved: boolean,
  reason: string | undefined,
): JsonValue | null {
  const fields = approvalFields(schema);
  if (fields === null) return null;
  const field = fields.includes('reason') ? 'reason' : fields.length === 1 ? fields[0] : undefined;
  return {
    approved,
    ...(reason !== undefined && reason !== '' && field !== undefined ? { [field]: reason } : {}),
  };
}
