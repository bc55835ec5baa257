import type { ApprovalView } from '../agent/views.ts';
import type { AuditEntry } from '../core/audit.ts';
import { sha256Hex } from '../core/canonical-json.ts';
import type { JsonValue } from '../core/json.ts';
import { readNudges } from '../core/nudges.ts';
import type { CountersignEvent } from './event-bus.ts';

/** An event and the audit entry it comes from: `seq` is its place in the log (SSE `id:`, cursors). */
export interface LoggedEvent {
  seq: number;
  event: CountersignEvent;
}

type Data = AuditEntry['data'];

const text = (data: Data, key: string): string | null => {
  const value = data[key];
  return typeof value === 'string' ? value : null;
};

const verdicts = new Set(['approved', 'rejected', 'answered', 'expired']);
const finishedStatuses = new Set(['succeeded', 'failed', 'unknown']);

/**
 * The live events an audit entry stands for: a pure function of the entry, so every process
 * reading the log derives the same events, and a replay is the same as the live stream was.
 * Entries that announce nothing (execution.started, tamper.*, call.logged, rule.revoked,
 * session.imported…) and entries lacking the fields an event needs (written by hand, or by
 * tests) give none.
 *
 * Entries written before `request.raised` carried `createdAt`, `raisedBy` and `status` still
 * read: the entry's time stands for the creation, the raiser is unknown (null), and the
 * request is taken as pending. (An auto-approved request of that age is announced too, and no
 * decision follows; a reader that fetches it finds it not pending — the inbox's card route
 * answers 204 — and webhooks never send history from before they were configured.)
 */
export function eventsOf(entry: AuditEntry): CountersignEvent[] {
  const { data, requestId, session } = entry;
  if (requestId === null || session === null) return [];
  // An erased entry stands for nothing any more: a replay must not rebuild a card (or a
  // webhook) from what is left of it.
  if (entry.erasedAt !== undefined) return [];
  const at = entry.at;
  switch (entry.kind) {
    case 'request.raised': {
      const approval = approvalOf(entry, requestId, session);
      return approval ? [{ type: 'approval.requested', at, approval }] : [];
    }
    case 'request.decided': {
      const verdict = text(data, 'verdict');
      if (verdict === null || !verdicts.has(verdict)) return [];
      return [
        {
          type: 'approval.decided',
          at,
          requestId,
          session,
          verdict: verdict as 'approved' | 'rejected' | 'answered',
          by: entry.actor,
          kind: 'person',
        },
      ];
    }
    case 'request.approval-added': {
      const approvals = data.approvals;
      const needed = data.approvalsNeeded;
      if (typeof approvals !== 'number' || typeof needed !== 'number') return [];
      return [
        {
          type: 'approval.progressed',
          at,
          requestId,
          session,
          by: entry.actor,
          approvals,
          approvalsNeeded: needed,
          requiredRole: text(data, 'requiredRole'),
          edited: typeof data.edited === 'object' && data.edited !== null,
        },
      ];
    }
    case 'request.expired':
      return [
        {
          type: 'approval.decided',
          at,
          requestId,
          session,
          verdict: 'expired',
          by: entry.actor,
          kind: 'expiry',
        },
      ];
    case 'request.moved-on':
      return [
        {
          type: 'approval.decided',
          at,
          requestId,
          session,
          verdict: 'rejected',
          by: entry.actor,
          kind: 'moved-on',
        },
      ];
    case 'request.reminder':
    case 'request.escalated':
    case 'request.expiring': {
      const tool = text(data, 'tool');
      const dueAt = text(data, 'dueAt');
      const expiresAt = text(data, 'expiresAt');
      if (tool === null || dueAt === null || expiresAt === null) return [];
      return [
        {
          type: entry.kind,
          at,
          requestId,
          session,
          kind: text(data, 'kind') === 'port' ? 'port' : 'tool-call',
          tool,
          dueAt,
          expiresAt,
          requiredRole: text(data, 'requiredRole'),
          escalatedTo: entry.kind === 'request.escalated' ? text(data, 'escalatedTo') : null,
        },
      ];
    }
    case 'request.claimed':
    case 'request.released':
      return [
        {
          type: entry.kind,
          at,
          requestId,
          session,
          by: entry.actor,
          until: entry.kind === 'request.claimed' ? text(data, 'until') : null,
        },
      ];
    case 'execution.finished': {
      const status = text(data, 'status');
      if (status === null || !finishedStatuses.has(status)) return [];
      return [
        {
          type: 'execution.finished',
          at,
          requestId,
          session,
          status: status as 'succeeded' | 'failed' | 'unknown',
        },
      ];
    }
    case 'workflow.requested':
    case 'workflow.answered':
    case 'workflow.expired': {
      const run = text(data, 'run');
      const workflow = text(data, 'workflow');
      const port = text(data, 'port');
      if (run === null || workflow === null || port === null) return [];
      const base = { at, requestId, session, run, workflow, port };
      if (entry.kind === 'workflow.requested')
        return [{ type: 'workflow.requested', ...base, expiresAt: text(data, 'expiresAt') }];
      return [{ type: entry.kind, ...base, by: entry.actor }];
    }
    default:
      return [];
  }
}

/** Every event of a page of entries, each with its entry's seq, in log order. */
export function loggedEventsOf(entries: readonly AuditEntry[]): LoggedEvent[] {
  const logged: LoggedEvent[] = [];
  for (const entry of entries) for (const event of eventsOf(entry)) logged.push({ seq: entry.seq, event });
  return logged;
}

/** The request as a person reviews it, from its `request.raised` entry; null when the entry cannot say. */
function approvalOf(entry: AuditEntry, id: string, session: string): ApprovalView | null {
  const { data } = entry;
  // Raised already approved by a standing or auto rule: nobody is asked, nothing is announced.
  if ((text(data, 'status') ?? 'pending') !== 'pending') return null;
  // A port request names its port where a tool call names its tool: one card either way.
  const tool = text(data, 'tool') ?? text(data, 'port');
  const argsJson = text(data, 'args');
  const argsHash = text(data, 'argsHash');
  const effect = text(data, 'effect');
  const expiresAt = text(data, 'expiresAt');
  if (tool === null || argsJson === null || argsHash === null || effect === null || expiresAt === null)
    return null;
  let args: JsonValue;
  try {
    args = JSON.parse(argsJson) as JsonValue;
  } catch {
    return null;
  }
  const kind = text(data, 'kind') === 'port' ? 'port' : 'tool-call';
  return {
    id,
    kind,
    session,
    run: text(data, 'run'),
    // Entries written before these were recorded say less; the row has them (GET /v1/requests/{id}).
    agent: text(data, 'agent') ?? text(data, 'workflow') ?? '',
    callId: text(data, 'callId') ?? '',
    customer: text(data, 'customer'),
    requiredRole: text(data, 'requiredRole'),
    tool,
    args,
    argsHash,
    effect,
    createdAt: text(data, 'createdAt') ?? entry.at,
    expiresAt,
    status: 'pending',
    decision: null,
    raisedBy: text(data, 'raisedBy'),
    editable: Array.isArray(data.editable)
      ? data.editable.filter((f): f is string => typeof f === 'string')
      : [],
    approvalsNeeded: typeof data.approvalsNeeded === 'number' ? data.approvalsNeeded : 1,
    approvals: [],
    edit: null,
    // The recorded canonical JSON against its recorded digest, as the request row is checked.
    integrity: sha256Hex(argsJson) === argsHash ? 'ok' : 'mismatch',
    // Raised just now: nobody holds it, nothing has fired yet (its nudge times, when its tool
    // or port sets any, are in the entry; the row says what fired later).
    claim: null,
    escalatedTo: null,
    nudges: readNudges(data.nudges) ?? null,
  };
}
