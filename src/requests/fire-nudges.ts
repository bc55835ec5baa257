import type { ApprovalRequest, NudgeKind } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { markSent, nextNudge, nudgesAt } from '../core/nudges.ts';
import { emit } from '../events/emit.ts';
import type { EventBus, NudgeEvent } from '../events/event-bus.ts';
import type { RequestTimers } from '../store/ports/request-timers.ts';

/** Rows read per page of the nudge due-query. */
export const NUDGE_PAGE = 200;
/** Pages per pass at most: the rest are due on the next pass (the index keeps their order). */
const MAX_PAGES = 5;

/** The audit entry of one nudge, as every instance would write it (only the winner does). */
export function nudgeEntry(request: ApprovalRequest, kind: NudgeKind, dueAt: string): AuditEvent {
  const base = {
    session: request.session,
    requestId: request.id,
    actor: 'countersign',
  };
  const data = {
    kind: request.kind,
    tool: request.tool,
    dueAt,
    expiresAt: request.expiresAt,
    requiredRole: request.requiredRole,
    customer: request.customer,
  };
  switch (kind) {
    case 'reminder':
      return { ...base, kind: 'request.reminder', data };
    case 'escalated':
      return {
        ...base,
        kind: 'request.escalated',
        data: { ...data, escalatedTo: request.nudges?.escalateTo ?? '' },
      };
    case 'expiring':
      return { ...base, kind: 'request.expiring', data };
  }
}

/**
 * Fires every nudge due at `now` (reminders, escalations, expiry warnings), each once across
 * every process sharing the store: it reads the due-query (an index range of pending rows by
 * next nudge time, never every pending row) and fires each with the store's compare-and-set,
 * so of two instances that read the same row one writes the nudge and its audit entry and the
 * other writes nothing. A row whose expiry has come is left to the expiry sweep. Several
 * nudges of one row that are all overdue (a server was down) fire in order. Returns what fired
 * here; the webhooks and live views get them from the audit log, the bus only wakes them.
 */
export async function fireDueNudges(options: {
  store: RequestTimers;
  now: Date;
  events?: EventBus;
}): Promise<NudgeEvent[]> {
  const { store, events } = options;
  const at = options.now.toISOString();
  const fired: NudgeEvent[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await store.listNudgesDue({ at, limit: NUDGE_PAGE });
    let advanced = 0;
    for (let request of due) {
      for (;;) {
        const next = nextNudge(request.nudges);
        if (request.nudges === null || next === null || next.at > at || request.expiresAt <= at) break;
        // All nudges of this moment at once: the next nudge time then always moves on, which
        // is what makes the store's compare-and-set on it hold once (nudgesAt says why).
        const kinds = nudgesAt(request.nudges, next.at);
        const entries = kinds.map((kind) => nudgeEntry(request, kind, next.at));
        const to = kinds.reduce((nudges, kind) => markSent(nudges, kind, at), request.nudges);
        const escalatedTo = kinds.includes('escalated')
          ? (request.nudges.escalateTo ?? undefined)
          : undefined;
        const won = await store.advanceNudge(
          request.id,
          { at, from: request.nudges, to, ...(escalatedTo === undefined ? {} : { escalatedTo }) },
          entries,
        );
        // Lost: another process fired it (and the ones after it, if due); nothing more here.
        if (won === null) break;
        advanced++;
        for (const kind of kinds) {
          const event: NudgeEvent = {
            type: `request.${kind}`,
            at,
            requestId: request.id,
            session: request.session,
            kind: request.kind,
            tool: request.tool,
            dueAt: next.at,
            expiresAt: request.expiresAt,
            requiredRole: request.requiredRole,
            escalatedTo: won.escalatedTo,
          };
          fired.push(event);
          emit(events, event);
        }
        request = won;
      }
    }
    // A short page, or one where nothing moved (all lost or left to expiry), is the end for now.
    if (due.length < NUDGE_PAGE || advanced === 0) break;
  }
  return fired;
}
