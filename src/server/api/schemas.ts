import { z } from 'zod';
import { userIdPattern } from '../../core/ids.ts';
import { jsonValue } from '../../core/json-schema.ts';

/**
 * Request bodies of the HTTP API. The OpenAPI document is generated from these same
 * schemas, so the description cannot drift from what is enforced.
 */
/** A port request's answer: data in the port's response schema. */
export const answerBody = z.strictObject({
  response: jsonValue.describe(
    'The answer, in the port\'s response schema, e.g. {"approved": true, "note": "…"}',
  ),
});

export const decisionBody = z.looseObject({
  approved: z.boolean().describe('true approves the stored call; false rejects it'),
  reason: z
    .string()
    .max(2000)
    .optional()
    .describe('Sent to the model (and so the customer) on rejection; a default is used when absent'),
  remember: z
    .enum(['tool', 'tool-with-args'])
    .optional()
    .describe('Approve later matching calls on this session without asking (tools that allow it)'),
  edit: z
    .record(z.string(), jsonValue)
    .optional()
    .describe(
      'Approve with changes: the argument fields to change and their new values, e.g. {"quantity": 6}. Only fields the request lists in `editable`; the tool never changes. The edited call is validated, authorized and routed again (it may need another role or more approvers before it runs).',
    ),
});

export const messageBody = z.strictObject({
  text: z.string().min(1).max(20_000).describe('What the customer wrote'),
  user: z
    .string()
    .regex(userIdPattern)
    .optional()
    .describe('The customer (principal) the session belongs to; tools authorize against it'),
  agent: z.string().optional().describe("The agent to talk to (default: the app's first agent)"),
});

export const reconcileBody = z.strictObject({
  outcome: z.enum(['succeeded', 'failed']),
  result: z.string().max(20_000).optional(),
});

export const approvalStatus = z.enum(['pending', 'approved', 'rejected', 'answered', 'expired']);
export const executionStatus = z.enum(['started', 'succeeded', 'failed', 'unknown']);
