import { z } from 'zod';
import { statusOfCode } from '../http/error-status.ts';
import { documentedDecision } from './approval-routes.ts';
import { respondBody, resumeBody, startRunBody } from './run-routes.ts';
import { messageBody, reconcileBody } from './schemas.ts';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const arrayOf = (name: string): Schema => ({ type: 'array', items: ref(name) });
const bodyOf = (schema: z.ZodType): Schema => {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input' }) as Schema;
  delete json.$schema;
  return { required: true, content: { 'application/json': { schema: json } } };
};
const ok = (schema: Schema, description = 'OK'): Schema => ({
  description,
  content: { 'application/json': { schema } },
});
const errors = { default: { $ref: '#/components/responses/Error' } };
const path = (name: string, description: string): Schema => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});
const query = (name: string, description: string, schema: Schema = { type: 'string' }): Schema => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const nullable = (schema: Schema): Schema => ({ ...schema, nullable: true });
const json: Schema = { description: 'Any JSON value' };

/** The OpenAPI 3.0 description of /v1, served at /v1/openapi.json. A test checks it lists every route. */
export function openApiDocument(options: { runs: boolean } = { runs: false }): Schema {
  return {
    openapi: '3.0.3',
    info: {
      title: 'countersign',
      version: '1',
      description:
        'Tool calls that wait for a person, then run exactly as approved, once. Authenticate with ' +
        '`Authorization: Bearer <token>` (COUNTERSIGN_TOKENS) or, behind a trusted proxy, its identity header. ' +
        'Every error is `{"error":{"code","message"}}`; the code is stable, the message is for people.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths: {
      '/v1/openapi.json': {
        get: { summary: 'This document', security: [], responses: { 200: ok({ type: 'object' }) } },
      },
      '/v1/sessions/{session}/messages': {
        post: {
          summary: "Send a customer's message to a session (needs the `service` role)",
          description:
            'Requests still waiting in the session are answered "moved on" first. The response is the turn: the ' +
            "agent's reply, or the requests now waiting for a person.",
          parameters: [path('session', 'Session id: 1-128 letters, digits and . _ : @ -')],
          requestBody: bodyOf(messageBody),
          responses: { 200: ok(ref('TurnResult')), ...errors },
        },
      },
      '/v1/sessions/{session}': {
        get: {
          summary: 'A session: its customer, messages and waiting requests',
          parameters: [path('session', 'Session id')],
          responses: { 200: ok(ref('Session')), ...errors },
        },
      },
      '/v1/sessions/{session}/resume': {
        post: {
          summary: 'Continue a session after a failed or interrupted run, without a new message',
          parameters: [path('session', 'Session id')],
          responses: { 200: ok(ref('TurnResult')), ...errors },
        },
      },
      '/v1/approvals': {
        get: {
          summary: 'Approval requests: pending oldest first, decided newest decision first',
          parameters: [
            query('status', 'Filter by status', {
              type: 'string',
              enum: ['pending', 'approved', 'rejected', 'expired'],
            }),
            query('session', 'Only this session'),
            query('tool', 'Only this tool'),
            query('limit', 'At most this many (1-1000, default 200)', { type: 'integer' }),
          ],
          responses: { 200: ok(arrayOf('Approval')), ...errors },
        },
      },
      '/v1/approvals/{id}': {
        get: {
          summary: 'One approval request, with its decision if any',
          parameters: [path('id', 'Request id (apr_…)')],
          responses: { 200: ok(ref('Approval')), ...errors },
        },
      },
      '/v1/approvals/{id}/decision': {
        post: {
          summary: 'Approve or reject a waiting request; the stored call runs and the session continues',
          description:
            'The decision names only the verdict, a reason and `remember`. The approver is the authenticated ' +
            'caller. Any other field (arguments, another tool, a name) is ignored — the stored call is what runs — ' +
            'and recorded in the audit trail as `tamper.ignored`. Tools may require a role; nobody may decide a ' +
            'request raised in their own session. 409 ALREADY_DECIDED names the first decision; 410 EXPIRED.',
          parameters: [path('id', 'Request id (apr_…)')],
          requestBody: bodyOf(documentedDecision),
          responses: { 200: ok(ref('TurnResult')), ...errors },
        },
      },
      '/v1/executions': {
        get: {
          summary: 'The execution ledger',
          parameters: [
            query('session', 'Only this session'),
            query('status', 'Filter by status', {
              type: 'string',
              enum: ['started', 'succeeded', 'failed', 'unknown'],
            }),
          ],
          responses: { 200: ok(arrayOf('Execution')), ...errors },
        },
      },
      '/v1/executions/{requestId}/reconcile': {
        post: {
          summary:
            'Settle an approved call whose outcome is unknown after a crash, then continue its session',
          parameters: [path('requestId', 'Request id (apr_…)')],
          requestBody: bodyOf(reconcileBody),
          responses: { 200: ok(ref('TurnResult')), ...errors },
        },
      },
      '/v1/audit': {
        get: {
          summary: 'The hash-chained audit trail, oldest first',
          parameters: [query('session', 'Only this session')],
          responses: { 200: ok(arrayOf('AuditEntry')), ...errors },
        },
      },
      '/v1/audit/verify': {
        get: {
          summary: 'Walk the audit chain; reports the first entry whose link does not hold',
          responses: { 200: ok(ref('AuditVerification')), ...errors },
        },
      },
      '/v1/rules': {
        get: {
          summary: 'Standing approvals ("always for this session")',
          parameters: [
            query('session', 'Only this session'),
            query('includeRevoked', 'Include revoked rules', { type: 'string', enum: ['true', 'false'] }),
          ],
          responses: { 200: ok(arrayOf('Rule')), ...errors },
        },
      },
      '/v1/rules/{id}/revoke': {
        post: {
          summary: 'Revoke a standing approval; the next matching call asks a person again',
          parameters: [path('id', 'Rule id (rule_…)')],
          responses: { 200: ok(ref('Rule')), ...errors },
        },
      },
      ...(options.runs ? runPaths() : {}),
      '/v1/events': {
        get: {
          summary:
            'Server-Sent Events: approval.requested, approval.decided, execution.finished, turn.finished',
          description:
            'Each event is `event: <type>` with the JSON event as data; a `ready` event opens the stream. Events ' +
            'are notifications, not the record: after a reconnect, re-read the lists.',
          parameters: [query('session', 'Only events of this session')],
          responses: {
            200: {
              description: 'An event stream',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errors,
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        Error: {
          description: `An error. Codes and statuses: ${Object.entries(statusOfCode)
            .map(([code, status]) => `${code} ${status}`)
            .join(', ')}.`,
          content: { 'application/json': { schema: ref('Error') } },
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', enum: Object.keys(statusOfCode) },
                message: { type: 'string' },
              },
            },
          },
        },
        Decision: {
          type: 'object',
          properties: {
            verdict: { type: 'string', enum: ['approved', 'rejected', 'expired'] },
            by: { type: 'string' },
            reason: nullable({ type: 'string' }),
            at: { type: 'string', format: 'date-time' },
            kind: { type: 'string', enum: ['person', 'moved-on', 'expiry', 'standing-rule', 'auto-rule'] },
          },
        },
        Approval: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            session: { type: 'string' },
            tool: { type: 'string' },
            args: json,
            argsHash: { type: 'string', description: 'SHA-256 of the canonical JSON of args' },
            effect: { type: 'string', description: 'What will happen, in words' },
            createdAt: { type: 'string', format: 'date-time' },
            expiresAt: { type: 'string', format: 'date-time' },
            status: { type: 'string', enum: ['pending', 'approved', 'rejected', 'expired'] },
            decision: nullable(ref('Decision')),
            agent: { type: 'string' },
            callId: nullable({ type: 'string' }),
            customer: nullable({ type: 'string' }),
            requiredRole: nullable({ type: 'string' }),
            standingAllowed: { type: 'boolean' },
          },
        },
        Execution: {
          type: 'object',
          properties: {
            requestId: { type: 'string' },
            session: { type: 'string' },
            tool: { type: 'string' },
            args: json,
            status: { type: 'string', enum: ['started', 'succeeded', 'failed', 'unknown'] },
            result: json,
            idempotencyKey: { type: 'string' },
            startedAt: { type: 'string', format: 'date-time' },
            finishedAt: nullable({ type: 'string', format: 'date-time' }),
          },
        },
        TurnResult: {
          type: 'object',
          properties: {
            session: { type: 'string' },
            status: {
              type: 'string',
              enum: ['completed', 'awaiting_approval', 'awaiting_reconciliation', 'continuing'],
            },
            reply: nullable({ type: 'string' }),
            approvals: { type: 'array', items: ref('Approval') },
            unknown: { type: 'array', items: ref('Execution') },
          },
        },
        Session: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            agent: { type: 'string' },
            customer: nullable({ type: 'string' }),
            createdAt: { type: 'string', format: 'date-time' },
            updatedAt: { type: 'string', format: 'date-time' },
            messages: { type: 'array', items: { type: 'object' } },
            pending: arrayOf('Approval'),
          },
        },
        AuditEntry: {
          type: 'object',
          properties: {
            seq: { type: 'integer' },
            at: { type: 'string', format: 'date-time' },
            kind: { type: 'string' },
            session: nullable({ type: 'string' }),
            requestId: nullable({ type: 'string' }),
            actor: { type: 'string' },
            data: { type: 'object' },
            prevHash: { type: 'string' },
            hash: { type: 'string' },
          },
        },
        AuditVerification: {
          type: 'object',
          properties: {
            ok: { type: 'boolean' },
            entries: { type: 'integer' },
            brokenAt: nullable({
              type: 'integer',
              description:
                'The first entry whose link fails; null when the chain links up but entries are missing',
            }),
            problem: { type: 'string' },
            missing: {
              type: 'array',
              description: 'Requests and ledger rows without the audit entries their state implies',
              items: {
                type: 'object',
                properties: {
                  missing: { type: 'string' },
                  count: { type: 'integer' },
                  first: { type: 'array', items: { type: 'string' } },
                },
              },
            },
            head: nullable({
              type: 'object',
              description: 'The last entry; record it elsewhere so a chain cut short can be noticed',
              properties: { seq: { type: 'integer' }, hash: { type: 'string' } },
            }),
          },
        },
        RunSummary: {
          type: 'object',
          properties: {
            run: { type: 'string' },
            workflow: { type: 'string' },
            version: { type: 'integer' },
            status: { type: 'string', enum: ['running', 'awaiting_input', 'completed', 'failed', 'expired'] },
            checkpoint: { type: 'string' },
            createdAt: { type: 'string', format: 'date-time' },
            updatedAt: { type: 'string', format: 'date-time' },
          },
        },
        RunView: {
          type: 'object',
          properties: {
            run: { type: 'string' },
            workflow: { type: 'string' },
            version: { type: 'integer' },
            status: { type: 'string', enum: ['running', 'awaiting_input', 'completed', 'failed', 'expired'] },
            checkpoint: { type: 'string' },
            requests: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  id: { type: 'string' },
                  port: { type: 'string' },
                  data: json,
                  createdAt: { type: 'string' },
                  expiresAt: nullable({
                    type: 'string',
                    description: 'When it stops taking answers; null for requests older than expiry (never)',
                  }),
                },
              },
            },
            outputs: { type: 'array', items: json },
            expired: {
              type: 'array',
              description: 'Requests that expired unanswered; the branch waiting on each ended there',
              items: {
                type: 'object',
                properties: {
                  requestId: { type: 'string' },
                  port: { type: 'string' },
                  expiresAt: { type: 'string' },
                  at: { type: 'string' },
                },
              },
            },
            error: { type: 'object' },
          },
        },
        Rule: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            session: { type: 'string' },
            tool: { type: 'string' },
            toolIdentity: { type: 'string' },
            argsHash: nullable({ type: 'string' }),
            sourceRequest: { type: 'string' },
            createdAt: { type: 'string', format: 'date-time' },
            createdBy: { type: 'string' },
            revokedAt: nullable({ type: 'string', format: 'date-time' }),
            revokedBy: nullable({ type: 'string' }),
          },
        },
      },
    },
  };
}

/** Served when the app has workflows. */
function runPaths(): Schema {
  const run = path('run', 'Run id');
  return {
    '/v1/runs': {
      get: {
        summary: 'Workflow runs with their status',
        responses: { 200: ok(arrayOf('RunSummary')), ...errors },
      },
      post: {
        summary: 'Start a workflow run (needs the `service` role); it runs to its first wait or its end',
        requestBody: bodyOf(startRunBody),
        responses: { 200: ok(ref('RunView')), ...errors },
      },
    },
    '/v1/runs/{run}': {
      get: {
        summary: 'A run where it stands: status, waiting requests, outputs (read only)',
        parameters: [run],
        responses: { 200: ok(ref('RunView')), ...errors },
      },
    },
    '/v1/runs/{run}/history': {
      get: {
        summary: "The run's checkpoints, each with its parent",
        parameters: [run],
        responses: { 200: ok({ type: 'array', items: { type: 'object' } }), ...errors },
      },
    },
    '/v1/runs/{run}/resume': {
      post: {
        summary: 'Continue a run from its latest (or a given) checkpoint',
        parameters: [run],
        requestBody: bodyOf(resumeBody),
        responses: { 200: ok(ref('RunView')), ...errors },
      },
    },
    '/v1/runs/{run}/requests/{requestId}/response': {
      post: {
        summary: 'Answer a request the run waits on, once; the run continues',
        description:
          'The answer is recorded with the authenticated caller as `by`. A port may require a role ' +
          "(the refund workflow's `manager-approval` needs `manager`). A second answer gets 409 ALREADY_DECIDED; " +
          'an answer after the request expired gets 410 EXPIRED, and nothing is recorded.',
        parameters: [run, path('requestId', 'The waiting request id')],
        requestBody: bodyOf(respondBody),
        responses: { 200: ok(ref('RunView')), ...errors },
      },
    },
  };
}
