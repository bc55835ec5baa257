import type { ApprovalRequest, DecisionKind, RequestKind } from '../core/approval.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { assertStorableInstant } from '../core/instant.ts';
import type { DecisionStats, DecisionTimes, StatsQuery } from './ports/decision-stats.ts';

// The one definition of the decision numbers: what a row counts towards, how a percentile is
// taken, how the parts are put together. The SQL backends compute the same groups with
// sql/decision-stats-sql.ts and hand them to `assembleStats`; the memory and file books
// compute them from rows here.

/** How many of the latest person rejections in the window the reasons are counted from. */
export const REASON_SAMPLE = 500;
const TOP_REASONS = 10;

/** One counted group: rows decided in the window with these values. */
export interface DecidedGroup {
  status: string;
  decidedKind: string | null;
  decidedBy: string | null;
  kind: RequestKind;
  tool: string;
  count: number;
}

export function assertStatsQuery(query: StatsQuery): void {
  // The bounds are compared as text with stored times, so they take the stored form
  // (statsWindow normalises what a person gives before it gets here).
  for (const [name, value] of [
    ['since', query.since],
    ['until', query.until],
  ] as const) {
    if (typeof value !== 'string')
      throw new InvalidInputError(
        `Stats ${name} must be an ISO-8601 instant like 2026-12-01T00:00:00.000Z; got ${String(value)}.`,
      );
    assertStorableInstant(value, `Stats ${name}`);
  }
  if (!(query.since < query.until))
    throw new InvalidInputError(`Stats since (${query.since}) must be before until (${query.until}).`);
}

/** Nearest rank: the ceil(p·n)-th smallest (1-based), the same integer rule the SQL uses. */
export function nearestRank(n: number, percent: 50 | 90): number {
  return percent === 50 ? Math.floor((n + 1) / 2) : Math.floor((9 * n + 9) / 10);
}

/** Rows in memory → what the SQL backends get from their grouped queries. */
export function statsOfRows(rows: Iterable<ApprovalRequest>, query: StatsQuery): DecisionStats {
  const groups = new Map<string, DecidedGroup>();
  const times = new Map<string, { kind: RequestKind; tool: string; role: string | null; ms: number[] }>();
  const rejected: Array<{ at: string; id: string; reason: string | null }> = [];
  for (const row of rows) {
    const decision = row.decision;
    if (decision === null || decision.at < query.since || decision.at >= query.until) continue;
    const groupKey = JSON.stringify([row.status, decision.kind, decision.by, row.kind, row.tool]);
    const group = groups.get(groupKey) ?? {
      status: row.status,
      decidedKind: decision.kind,
      decidedBy: decision.by,
      kind: row.kind,
      tool: row.tool,
      count: 0,
    };
    group.count += 1;
    groups.set(groupKey, group);
    if (decision.kind !== 'person') continue;
    const timeKey = JSON.stringify([row.kind, row.tool, row.requiredRole]);
    const entry = times.get(timeKey) ?? { kind: row.kind, tool: row.tool, role: row.requiredRole, ms: [] };
    entry.ms.push(Math.round(Date.parse(decision.at) - Date.parse(row.createdAt)));
    times.set(timeKey, entry);
    if (row.status === 'rejected') rejected.push({ at: decision.at, id: row.id, reason: decision.reason });
  }
  const timeRows: DecisionTimes[] = [...times.values()].map(({ kind, tool, role, ms }) => {
    ms.sort((a, b) => a - b);
    return {
      kind,
      tool,
      role,
      decisions: ms.length,
      p50Ms: ms[nearestRank(ms.length, 50) - 1] ?? 0,
      p90Ms: ms[nearestRank(ms.length, 90) - 1] ?? 0,
    };
  });
  rejected.sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1));
  return assembleStats(
    query,
    [...groups.values()],
    timeRows,
    rejected.slice(0, REASON_SAMPLE).map((entry) => entry.reason),
  );
}

/** The parts, counted by the backend, as one DecisionStats: sorted, summed, the reasons grouped. */
export function assembleStats(
  query: StatsQuery,
  groups: readonly DecidedGroup[],
  times: readonly DecisionTimes[],
  sampledReasons: ReadonlyArray<string | null>,
): DecisionStats {
  const decided = { approved: 0, rejected: 0, answered: 0, expired: 0 };
  const byKind = new Map<DecisionKind, number>();
  const expiries = new Map<string, { kind: RequestKind; tool: string; count: number }>();
  const approvers = new Map<
    string,
    { approver: string; approved: number; rejected: number; answered: number }
  >();
  for (const group of groups) {
    if (group.status in decided) decided[group.status as keyof typeof decided] += group.count;
    if (group.status === 'rejected' && group.decidedKind !== null) {
      const kind = group.decidedKind as DecisionKind;
      byKind.set(kind, (byKind.get(kind) ?? 0) + group.count);
    }
    if (group.status === 'expired') {
      const key = `${group.kind}\n${group.tool}`;
      const entry = expiries.get(key) ?? { kind: group.kind, tool: group.tool, count: 0 };
      entry.count += group.count;
      expiries.set(key, entry);
    }
    if (group.decidedKind === 'person' && group.decidedBy !== null) {
      const entry = approvers.get(group.decidedBy) ?? {
        approver: group.decidedBy,
        approved: 0,
        rejected: 0,
        answered: 0,
      };
      if (group.status === 'approved' || group.status === 'rejected' || group.status === 'answered')
        entry[group.status] += group.count;
      approvers.set(group.decidedBy, entry);
    }
  }
  const reasons = new Map<string, number>();
  for (const reason of sampledReasons) {
    const text = reason?.trim() || '(no reason given)';
    reasons.set(text, (reasons.get(text) ?? 0) + 1);
  }
  return ordered({
    since: query.since,
    until: query.until,
    decided,
    timeToDecision: [...times],
    rejections: {
      total: decided.rejected,
      byKind: [...byKind].map(([kind, count]) => ({ kind, count })),
      reasons: [...reasons].map(([reason, count]) => ({ reason, count })),
      reasonsFrom: sampledReasons.length,
    },
    expiries: { total: decided.expired, byTool: [...expiries.values()] },
    approvers: [...approvers.values()],
  });
}

/**
 * Stats of several books as one: counts add up. Percentiles cannot be merged, and need not be:
 * a tool's (or port's) decisions live in one book (the agents' store keeps tool calls, a
 * separate checkpoint store its runs' port requests), so each row of timeToDecision comes
 * from exactly one part.
 */
export function mergeStats(query: StatsQuery, parts: readonly DecisionStats[]): DecisionStats {
  const sum = <T>(items: T[], key: (item: T) => string, add: (into: T, from: T) => void): T[] => {
    const merged = new Map<string, T>();
    for (const item of items) {
      const found = merged.get(key(item));
      if (found === undefined) merged.set(key(item), structuredClone(item));
      else add(found, item);
    }
    return [...merged.values()];
  };
  const decided = { approved: 0, rejected: 0, answered: 0, expired: 0 };
  for (const part of parts)
    for (const status of Object.keys(decided) as Array<keyof typeof decided>)
      decided[status] += part.decided[status];
  return ordered({
    since: query.since,
    until: query.until,
    decided,
    timeToDecision: parts.flatMap((part) => part.timeToDecision),
    rejections: {
      total: decided.rejected,
      byKind: sum(
        parts.flatMap((part) => part.rejections.byKind),
        (item) => item.kind,
        (into, from) => {
          into.count += from.count;
        },
      ),
      reasons: sum(
        parts.flatMap((part) => part.rejections.reasons),
        (item) => item.reason,
        (into, from) => {
          into.count += from.count;
        },
      ),
      reasonsFrom: parts.reduce((total, part) => total + part.rejections.reasonsFrom, 0),
    },
    expiries: {
      total: decided.expired,
      byTool: sum(
        parts.flatMap((part) => part.expiries.byTool),
        (item) => `${item.kind}\n${item.tool}`,
        (into, from) => {
          into.count += from.count;
        },
      ),
    },
    approvers: sum(
      parts.flatMap((part) => part.approvers),
      (item) => item.approver,
      (into, from) => {
        into.approved += from.approved;
        into.rejected += from.rejected;
        into.answered += from.answered;
      },
    ),
  });
}

const text = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byCount =
  <T extends { count: number }>(key: (item: T) => string) =>
  (a: T, b: T) =>
    b.count - a.count || text(key(a), key(b));
const decisionsOf = (entry: { approved: number; rejected: number; answered: number }) =>
  entry.approved + entry.rejected + entry.answered;

/** The one order of every section: largest first, then by name, so output is stable. */
function ordered(stats: DecisionStats): DecisionStats {
  return {
    ...stats,
    timeToDecision: [...stats.timeToDecision].sort(
      (a, b) =>
        b.decisions - a.decisions ||
        text(a.kind, b.kind) ||
        text(a.tool, b.tool) ||
        text(a.role ?? '', b.role ?? ''),
    ),
    rejections: {
      ...stats.rejections,
      byKind: [...stats.rejections.byKind].sort(byCount((item) => item.kind)),
      reasons: [...stats.rejections.reasons].sort(byCount((item) => item.reason)).slice(0, TOP_REASONS),
    },
    expiries: {
      ...stats.expiries,
      byTool: [...stats.expiries.byTool].sort(byCount((item) => `${item.kind}\n${item.tool}`)),
    },
    approvers: [...stats.approvers].sort(
      (a, b) => decisionsOf(b) - decisionsOf(a) || text(a.approver, b.approver),
    ),
  };
}
