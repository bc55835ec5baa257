import { z } from 'zod';
import { AUDIT_KINDS, type AuditEvent } from '../core/audit.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { jsonValue } from '../core/json-schema.ts';
import { pathText } from './snapshot-rules.ts';

/*
 * The shape of the audit events a caller hands a store directly (`appendAudit`, the `audit`
 * of `importSession`): checked in guard.ts before any backend links them, so a malformed
 * event is refused with INVALID_INPUT naming its field on every backend, instead of a
 * TypeError in one and a row of the wrong type in another. The data's own shape belongs to
 * its kind and is not judged here, only that it is a JSON object (nested at most
 * MAX_JSON_DEPTH deep, as jsonValue checks). Events the library writes itself are typed.
 */
const auditEventSchema = z.object({
  kind: z.enum(AUDIT_KINDS),
  session: z.string().nullable(),
  requestId: z.string().nullable(),
  actor: z.string(),
  data: jsonValue.refine((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    message: 'must be a JSON object',
  }),
});

const auditEventsSchema = z.array(auditEventSchema);

/** `input` as audit events, or INVALID_INPUT naming the first malformed field; `what` says whose. */
export function readAuditEvents(input: unknown, what: string): AuditEvent[] {
  const parsed = auditEventsSchema.safeParse(input);
  if (parsed.success) return input as AuditEvent[];
  const issue = parsed.error.issues[0];
  const problem = (issue?.message ?? 'malformed').replace(/\.$/, '');
  throw new InvalidInputError(
    `${what} are malformed: ${pathText(issue?.path ?? [], 'the whole value')}: ${problem}. Nothing was written.`,
    {
      hint: `Pass an array of audit events: { kind (one of ${AUDIT_KINDS.length} kinds, such as request.decided), session and requestId (text or null), actor (text), data (a JSON object) }.`,
    },
  );
}
