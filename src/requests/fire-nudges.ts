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
/** Request ids a warning about realigned rows names; the count says how many more. */
const NAMED = 5;

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
 *
 * A due row it cannot move at all (nothing due by its nudges, or its compare-and-set lost)
 * is put back in step where the store keeps the time apart (`alignNudgeTime`): for a row whose
 * time was edited that is what lets it, and the rows behind it, fire; for one another process
 * just fired it finds the time in step and changes nothing. Rows realigned are logged (`log`).
 */
export async function fireDueNudges(options: {
  store: RequestTimers;
  now: Date;
  events?: EventBus;
  log?: (line: string) => void;
}): Promise<NudgeEvent[]> {
  const { store, events } = options;
  const at = options.now.toISOString();
  const fired: NudgeEvent[] = [];
  const realigned: string[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await store.listNudgesDue({ at, limit: NUDGE_PAGE });
    let advanced = 0;
    let aligned = 0;
    for (let request of due) {
      let moved = false;
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
        moved = true;
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
      // A row past its expiry is the expiry sweep's: it leaves the due-query when expired.
      if (moved || request.expiresAt <= at || store.alignNudgeTime === undefined) continue;
      const change = await store.alignNudgeTime(request.id);
      if (change === null) continue;
      aligned++;
      realigned.push(`${request.id} (${JSON.stringify(change.was)} → ${change.now ?? 'none'})`);
    }
    // A short page, or one where nothing moved (all lost or left to expiry), is the end for now;
    // realigned rows take their place in the index, so the next page reads past them.
    if (due.length < NUDGE_PAGE || advanced + aligned === 0) break;
  }
  if (realigned.length > 0) {
    const more = realigned.length > NAMED ? ` and ${realigned.length - NAMED} more` : '';
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    log(
      `countersign: ${realigned.length} pending request(s) held a next nudge time their nudges do not give (an edited row?), which kept them first in the nudge due-query without firing; put back in step: ${realigned.slice(0, NAMED).join(', ')}${more}.`,
    );
  }
  return fired;
}
