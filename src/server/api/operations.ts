import { z } from 'zod';
import { jsonValue } from '../../core/json-schema.ts';
import { RUN_STATUSES, type RunSort, type RunStatus } from '../../store/checkpoint-store.ts';
import { MAX_PAGE_LIMIT, PAGE_COUNT_CAP, REQUEST_SORTS } from '../../store/request-page.ts';
import { RUN_SORTS } from '../../store/run-page.ts';
import type { RequestSort } from '../../store/store.ts';
import { documentedDecision } from './approval-routes.ts';
import { claimBody } from './claim-routes.ts';
import { documentedRequestDecision } from './request-routes.ts';
import {
  approval,
  auditEntry,
  auditVerification,
  checkpoint,
  decisionStats,
  erasureReport,
  execution,
  requestOutcome,
  rule,
  runSummary,
  runView,
  session,
  turnResult,
} from './response-schemas.ts';
import { respondBody, resumeBody, startRunBody } from './run-routes.ts';
import { approvalStatus, executionStatus, messageBody, reconcileBody } from './schemas.ts';

export interface Parameter {
  name: string;
  in: 'path' | 'query';
  description: string;
  schema: z.ZodType;
}

/**
 * One route as the document describes it. `body` and `response` are the zod schemas the route
 * parses its body with and builds its 200 response as; errors are always the Error schema.
 */
export interface Operation {
  method: 'get' | 'post';
  /** OpenAPI template: `{name}` for a path parameter. */
  path: string;
  /** Unique; generated clients name their functions after it. */
  operationId: string;
  summary: string;
  description?: string;
  parameters?: Parameter[];
  body?: z.ZodType;
  /** The JSON 200 response, or 'event-stream' for Server-Sent Events. */
  response: z.ZodType | 'event-stream';
  /** Reachable without credentials. */
  public?: boolean;
  /** Kept for one release as an alias of the one request resource; clients should move. */
  deprecated?: boolean;
  /**
   * A keyset-paged list: `true`, the cursor of the next page is in the Link and X-Next-Cursor
   * headers (and the capped count with count=true); `cursor`, the same without a count;
   * `link`, in the Link header only.
   */
  paged?: boolean | 'link' | 'cursor';
}

const pathParam = (name: string, description: string): Parameter => ({
  name,
  in: 'path',
  description,
  schema: z.string(),
});
const queryParam = (name: string, description: string, schema: z.ZodType = z.string()): Parameter => ({
  name,
  in: 'query',
  description,
  schema,
});
const sessionParam = pathParam('session', 'Session id: 1-128 letters, digits and . _ : @ -');
const requestParam = (name: string) => pathParam(name, 'Request id (apr_…)');
const onlySession = queryParam('session', 'Only this session');

/** The one list query of requests (list-query.ts reads it), for /v1/requests and its alias. */
const requestListParams: Parameter[] = [
  queryParam('status', 'Filter by status', approvalStatus),
  queryParam('kind', 'Only tool calls or only workflow requests', z.enum(['tool-call', 'port'])),
  onlySession,
  queryParam('run', 'Only requests of this workflow run'),
  queryParam('tool', 'Tool (or port) name contains this, any case'),
  queryParam('customer', 'Customer contains this, any case'),
  queryParam('role', 'Only requests that need this role'),
  queryParam('text', 'Effect or customer contains this, any case (at most 1,000 characters, no NUL)'),
  queryParam(
    'sort',
    'oldest (the default for pending), newest (the default without a status), expiring (pending only, soonest ' +
      'expiry first) or decided (the default for a decided status: latest decision first)',
    z.enum(REQUEST_SORTS as [RequestSort, ...RequestSort[]]),
  ),
  queryParam(
    'after',
    'The cursor of the next page (X-Next-Cursor, or follow the Link header), with the same filters: a cursor ' +
      'not handed out, of another sort, or sent with other filters (limit and count are not filters) is 400 ' +
      'INVALID_CURSOR',
  ),
  queryParam(
    'limit',
    `At most this many (1-${MAX_PAGE_LIMIT}, default 200)`,
    z.int().min(1).max(MAX_PAGE_LIMIT),
  ),
  queryParam(
    'count',
    `true: X-Total-Count says how many match, counted up to ${PAGE_COUNT_CAP} (X-Total-Capped: true beyond)`,
    z.enum(['true', 'false']),
  ),
];

/** The list query of runs (run-list-query.ts reads it). */
const runListParams: Parameter[] = [
  queryParam('status', 'Only runs with this status', z.enum(RUN_STATUSES as [RunStatus, ...RunStatus[]])),
  queryParam('workflow', 'Only runs of this workflow (its name, exactly)'),
  queryParam('customer', 'Only runs started for this customer (`user` when it started), exactly'),
  queryParam(
    'sort',
    'newest (the default: latest started first) or oldest',
    z.enum(RUN_SORTS as [RunSort, ...RunSort[]]),
  ),
  queryParam(
    'after',
    'The cursor of the next page (X-Next-Cursor, or follow the Link header), with the same filters: a cursor ' +
      'not handed out, of another sort or list, or sent with other filters (limit and count are not filters) is ' +
      '400 INVALID_CURSOR',
  ),
  queryParam(
    'limit',
    `At most this many (1-${MAX_PAGE_LIMIT}, default 200)`,
    z.int().min(1).max(MAX_PAGE_LIMIT),
  ),
  queryParam(
    'count',
    `true: X-Total-Count says how many match, counted up to ${PAGE_COUNT_CAP} (X-Total-Capped: true beyond)`,
    z.enum(['true', 'false']),
  ),
];

/** Every /v1 operation but the runs'. To add a route: its zod response schema, then an entry here. */
export const operations: Operation[] = [
  {
    method: 'get',
    path: '/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    response: z.record(z.string(), jsonValue).describe('An OpenAPI 3.1 document'),
    public: true,
  },
  {
    method: 'post',
    path: '/v1/sessions/{session}/messages',
    operationId: 'postMessage',
    summary: "Send a customer's message to a session (needs the `service` role)",
    description:
      'Requests still waiting in the session are answered "moved on" first. The response is the turn: the ' +
      "agent's reply, or the requests now waiting for a person.",
    parameters: [sessionParam],
    body: messageBody,
    response: turnResult,
  },
  {
    method: 'get',
    path: '/v1/sessions/{session}',
    operationId: 'getSession',
    summary: 'A session: its customer, messages and waiting requests',
    parameters: [sessionParam],
    response: session,
  },
  {
    method: 'post',
    path: '/v1/sessions/{session}/resume',
    operationId: 'resumeSession',
    summary: 'Continue a session after a failed or interrupted run, without a new message',
    parameters: [sessionParam],
    response: turnResult,
  },
  {
    method: 'get',
    path: '/v1/requests',
    operationId: 'listRequests',
    summary:
      "Everything waiting for a person, and what was decided: agents' tool calls and workflow port " +
      'requests. Pending oldest first, decided newest decision first; one keyset page at a time',
    description:
      'A page reads about `limit` rows however many wait: the next page is `after` the last one (Link: ' +
      '<…&after=…>; rel="next", and X-Next-Cursor); the last page has neither header. Filters on tool, ' +
      'customer and text are partial and ignore case (ASCII).',
    parameters: requestListParams,
    paged: true,
    response: z.array(approval),
  },
  {
    method: 'get',
    path: '/v1/requests/{id}',
    operationId: 'getRequest',
    summary: 'One request of either kind, with its decision if any',
    parameters: [requestParam('id')],
    response: approval,
  },
  {
    method: 'post',
    path: '/v1/requests/{id}/decision',
    operationId: 'decideRequest',
    summary: 'Decide a waiting request: approve or reject a tool call, answer a workflow request',
    description:
      'A tool call takes `{"approved": true}` or `{"approved": false, "reason": "…"}` (plus `remember`); the ' +
      'stored call runs and the session continues. A workflow request takes `{"response": …}` in its port\'s ' +
      'response schema (`responseSchema` on the request); a port whose answer is `{approved, …text}` also ' +
      'takes `approved` and `reason` (nothing else: `remember` or another field is 400, as is an answer with ' +
      'fields the port does not take). The run continues either way. The decider is the authenticated caller; ' +
      'the raiser, the customer and a caller whose only role is `service` get 403 FORBIDDEN. 409 ' +
      'ALREADY_DECIDED names the first decision; 410 EXPIRED; 500 INTEGRITY_VIOLATION when the stored ' +
      'request no longer matches its hash (nothing runs).',
    parameters: [requestParam('id')],
    body: documentedRequestDecision,
    response: requestOutcome,
  },
  {
    method: 'post',
    path: '/v1/requests/{id}/claim',
    operationId: 'claimRequest',
    summary: 'Claim a waiting request to work on it: others see who holds it and until when',
    description:
      'The body is optional: `{"for": "30m"}` (default 15 minutes, at most 8 hours, never past the ' +
      "request's expiry). Claiming your own claim again renews it. A claim lapses by itself and never stops " +
      'anyone deciding: deciding needs no claim, and deciding a request someone else holds works. Whoever may ' +
      'decide the request may claim it: the raiser, the customer and a `service`-only caller get 403 FORBIDDEN, ' +
      'as does a caller without the required role. 409 CLAIMED names who holds it and until when; 409 ' +
      'ALREADY_DECIDED; 410 EXPIRED. Audited as `request.claimed`; streamed live, not sent as a webhook.',
    parameters: [requestParam('id')],
    body: claimBody,
    response: approval,
  },
  {
    method: 'post',
    path: '/v1/requests/{id}/release',
    operationId: 'releaseRequest',
    summary: 'Give back your claim on a request',
    description:
      'Nothing to give back (nobody holds it, or a claim that lapsed) answers the request as it is. Someone ' +
      "else's live claim is 409 CLAIMED: only its holder releases it; it lapses by itself. Audited as " +
      '`request.released`.',
    parameters: [requestParam('id')],
    response: approval,
  },
  {
    method: 'get',
    path: '/v1/stats',
    operationId: 'getStats',
    summary:
      'Numbers for the team: time to decision, rejections and reasons, expiries, decisions per approver',
    description:
      'Over the decisions taken in [since, until): counted from an index of decided rows, so the cost is the ' +
      'number decided in the window (0.8 s for 100,000 decided on SQLite, 1.4 s on PostgreSQL, on a loaded ' +
      '2-core machine: see docs/benchmarks.md), never the number waiting. The inbox stats page shows the same numbers.',
    parameters: [
      queryParam(
        'since',
        'Start (inclusive): an ISO-8601 time with its zone or a duration back from now (24h, 7d, 2w, 1y); default 7d',
      ),
      queryParam('until', 'End (exclusive): an ISO-8601 time or a duration back from now; default now'),
    ],
    response: decisionStats,
  },
  {
    method: 'get',
    path: '/v1/approvals',
    operationId: 'listApprovals',
    deprecated: true,
    summary: 'Deprecated alias of GET /v1/requests, kept for one release',
    parameters: requestListParams,
    paged: true,
    response: z.array(approval),
  },
  {
    method: 'get',
    path: '/v1/approvals/{id}',
    operationId: 'getApproval',
    deprecated: true,
    summary: 'Deprecated alias of GET /v1/requests/{id}, kept for one release',
    parameters: [requestParam('id')],
    response: approval,
  },
  {
    method: 'post',
    path: '/v1/approvals/{id}/decision',
    operationId: 'decideApproval',
    deprecated: true,
    summary:
      'Deprecated: POST /v1/requests/{id}/decision. Approve or reject a waiting tool call; the stored call ' +
      'runs and the session continues',
    description:
      'The decision names only the verdict, a reason and `remember`. The approver is the authenticated ' +
      'caller. Any other field (arguments, another tool, a name) is ignored — the stored call is what runs — ' +
      'and recorded in the audit trail as `tamper.ignored`. Tools may require a role. Separation of duties: ' +
      'whoever raised the request (`raisedBy`), the customer it acts for and a caller whose only role is ' +
      '`service` get 403 FORBIDDEN. 409 ALREADY_DECIDED names the first decision; 410 EXPIRED.',
    parameters: [requestParam('id')],
    body: documentedDecision,
    response: turnResult,
  },
  {
    method: 'get',
    path: '/v1/executions',
    operationId: 'listExecutions',
    summary: 'The execution ledger',
    parameters: [
      onlySession,
      queryParam('status', 'Filter by status', executionStatus),
      queryParam(
        'after',
        'The cursor of the next page (X-Next-Cursor, or follow the Link header), with the same session and ' +
          'status; under others it is 400 INVALID_CURSOR',
      ),
      queryParam(
        'limit',
        `At most this many (1-${MAX_PAGE_LIMIT}, default 200)`,
        z.int().min(1).max(MAX_PAGE_LIMIT),
      ),
    ],
    paged: 'cursor',
    response: z.array(execution),
  },
  {
    method: 'post',
    path: '/v1/executions/{requestId}/reconcile',
    operationId: 'reconcileExecution',
    summary: 'Settle an approved call whose outcome is unknown after a crash, then continue its session',
    parameters: [requestParam('requestId')],
    body: reconcileBody,
    response: turnResult,
  },
  {
    method: 'get',
    path: '/v1/audit',
    operationId: 'listAudit',
    summary: 'The hash-chained audit trail, oldest first; read by cursor with afterSeq and limit',
    parameters: [
      onlySession,
      queryParam(
        'afterSeq',
        'Only entries after this seq (exclusive): the last seq the reader has',
        z.string().regex(/^\d+$/),
      ),
      queryParam('limit', 'At most this many entries (1 or more)', z.string().regex(/^\d+$/)),
    ],
    paged: 'link',
    response: z.array(auditEntry),
  },
  {
    method: 'get',
    path: '/v1/audit/verify',
    operationId: 'verifyAudit',
    summary: 'Walk the audit chain; reports the first entry whose link does not hold',
    response: auditVerification,
  },
  {
    method: 'get',
    path: '/v1/rules',
    operationId: 'listRules',
    summary: 'Standing approvals ("always for this session")',
    parameters: [
      onlySession,
      queryParam('includeRevoked', 'Include revoked rules', z.enum(['true', 'false'])),
    ],
    response: z.array(rule),
  },
  {
    method: 'post',
    path: '/v1/customers/{principal}/erase',
    operationId: 'eraseCustomer',
    summary: "Erase one customer's data everywhere it was written (needs the `admin` role)",
    description:
      "Their pending requests are expired first (through the decision's compare-and-set: none can be approved " +
      'or run later), then their sessions, messages, ' +
      "requests, ledger rows, workflow runs, checkpoints and outbox rows are removed and their audit entries' " +
      'data erased in place, and last their data key is destroyed when encryption is on: ' +
      '`GET /v1/audit/verify` still passes and lists them as erased. One that stopped part way is finished ' +
      'by calling it again. Audited as ' +
      '`principal.erased` (who, when, which customer, counts). An id nothing names answers `erased: false`; ' +
      'a malformed one 400 INVALID_INPUT; without the admin role 403 FORBIDDEN.',
    parameters: [pathParam('principal', "The customer id (a session's principal, a request's customer)")],
    response: erasureReport,
  },
  {
    method: 'post',
    path: '/v1/rules/{id}/revoke',
    operationId: 'revokeRule',
    summary: 'Revoke a standing approval; the next matching call asks a person again',
    parameters: [pathParam('id', 'Rule id (rule_…)')],
    response: rule,
  },
  {
    method: 'get',
    path: '/v1/events',
    operationId: 'streamEvents',
    summary:
      'Server-Sent Events: approval.requested, approval.decided, execution.finished, workflow.requested, workflow.answered, workflow.expired, request.reminder, request.escalated, request.expiring, request.claimed, request.released, turn.finished',
    description:
      'Each event is `event: <type>` with the JSON event as data and `id: <seq>`, the seq of the audit entry it ' +
      'comes from; a `ready` event opens the stream. A client reconnecting with `Last-Event-ID` (or `?after=`) is ' +
      'sent every event after that seq, in order, then live ones, up to 1000 entries back; further behind it gets ' +
      'one `reload` event and should re-read the lists. turn.finished is live only.',
    parameters: [
      queryParam('session', 'Only events of this session'),
      queryParam(
        'after',
        'Replay the events after this audit seq (what Last-Event-ID does on a reconnect)',
        z.string().regex(/^\d+$/),
      ),
    ],
    response: 'event-stream',
  },
];

const runParam = pathParam('run', 'Run id');

/** Served when the app has workflows. */
export const runOperations: Operation[] = [
  {
    method: 'get',
    path: '/v1/runs',
    operationId: 'listRuns',
    summary: 'Workflow runs with their status, newest first; one keyset page at a time',
    description:
      'A page reads about `limit` runs however many there are: the next page is `after` the last one (Link: ' +
      '<…&after=…>; rel="next", and X-Next-Cursor); the last page has neither header. The filters are exact.',
    parameters: runListParams,
    paged: true,
    response: z.array(runSummary),
  },
  {
    method: 'post',
    path: '/v1/runs',
    operationId: 'startRun',
    summary: 'Start a workflow run (needs the `service` role); it runs to its first wait or its end',
    body: startRunBody,
    response: runView,
  },
  {
    method: 'get',
    path: '/v1/runs/{run}',
    operationId: 'getRun',
    summary: 'A run where it stands: status, waiting requests, outputs (read only)',
    parameters: [runParam],
    response: runView,
  },
  {
    method: 'get',
    path: '/v1/runs/{run}/history',
    operationId: 'getRunHistory',
    summary: "The run's checkpoints, each with its parent",
    parameters: [runParam],
    response: z.array(checkpoint),
  },
  {
    method: 'post',
    path: '/v1/runs/{run}/resume',
    operationId: 'resumeRun',
    summary: 'Continue a run from its latest (or a given) checkpoint',
    parameters: [runParam],
    body: resumeBody,
    response: runView,
  },
  {
    method: 'post',
    path: '/v1/runs/{run}/requests/{requestId}/response',
    operationId: 'respondToRunRequest',
    deprecated: true,
    summary: 'Deprecated: POST /v1/requests/{id}/decision. Answer a request the run waits on, once',
    description:
      'The answer is recorded with the authenticated caller as `by`. A port may require a role ' +
      "(the refund workflow's `manager-approval` needs `manager`). A second answer gets 409 ALREADY_DECIDED; " +
      'an answer after the request expired gets 410 EXPIRED, and nothing is recorded.',
    parameters: [runParam, pathParam('requestId', 'The waiting request id')],
    body: respondBody,
    response: runView,
  },
];
