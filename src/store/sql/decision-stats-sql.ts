import type { RequestKind } from '../../core/approval.ts';
import type { PayloadCodec } from '../codec.ts';
import { type DecidedGroup, REASON_SAMPLE } from '../decision-stats.ts';
import type { DecisionTimes } from '../ports/decision-stats.ts';
import { int, payload, type Row, text, textOrNull } from '../row-readers.ts';

/** What differs between the two SQL backends' stats statements. */
export interface StatsDialect {
  approvals: string;
  /** `?1`/`?2` or `$1`/`$2`: the window's since and until. */
  since: string;
  until: string;
  /** Whole milliseconds from `created_at` to `decided_at`. */
  msToDecision: string;
  /** SQLite: INDEXED BY the decided rows' index. */
  indexHint: string;
}

/**
 * The three statements behind DecisionStats, each a range of the covering index of decided
 * rows (`approvals_decided`: decided_at, id, then the columns counted), so the cost is the
 * rows decided in the window and never the waiting ones:
 * - groups: rows per (status, decided_kind, decided_by, kind, tool), a few dozen groups;
 * - times: the p50 and p90 rows of each (kind, tool, role), ranked by window functions
 *   (nearest rank, the integer rule of decision-stats.ts: nearestRank), so only two rows per
 *   group leave the database;
 * - reasons: the decisions of the latest REASON_SAMPLE person rejections (the reason is in
 *   the decision payload, which may be encrypted: it is decoded here, not grouped in SQL).
 */
export function decisionStatsSql(d: StatsDialect) {
  const from = `${d.approvals}${d.indexHint === '' ? '' : ` ${d.indexHint}`}`;
  const window = `decided_at >= ${d.since} AND decided_at < ${d.until}`;
  return {
    groups: `SELECT status, decided_kind, decided_by, kind, tool, COUNT(*) AS n FROM ${from}
      WHERE ${window} GROUP BY status, decided_kind, decided_by, kind, tool`,
    times: `SELECT kind, tool, required_role, n, rn, ms FROM (
        SELECT kind, tool, required_role, ms,
          ROW_NUMBER() OVER (PARTITION BY kind, tool, required_role ORDER BY ms) AS rn,
          COUNT(*) OVER (PARTITION BY kind, tool, required_role) AS n
        FROM (SELECT kind, tool, required_role, ${d.msToDecision} AS ms FROM ${from}
          WHERE ${window} AND decided_kind = 'person') AS d
      ) AS ranked
      WHERE rn = (n + 1) / 2 OR rn = (9 * n + 9) / 10`,
    reasons: `SELECT id, decision FROM ${from} WHERE ${window} AND status = 'rejected' AND decided_kind = 'person'
      ORDER BY decided_at DESC, id DESC LIMIT ${REASON_SAMPLE}`,
  };
}

export function toDecidedGroup(row: Row): DecidedGroup {
  const where = 'approvals(stats group)';
  return {
    status: text(row, 'status', where),
    decidedKind: textOrNull(row, 'decided_kind', where),
    decidedBy: textOrNull(row, 'decided_by', where),
    kind: text(row, 'kind', where) as RequestKind,
    tool: text(row, 'tool', where),
    count: int(row, 'n', where),
  };
}

/** The ranked rows (one or two per group) as one DecisionTimes per group. */
export function toDecisionTimes(rows: readonly Row[]): DecisionTimes[] {
  const groups = new Map<string, DecisionTimes>();
  for (const row of rows) {
    const where = 'approvals(stats times)';
    const kind = text(row, 'kind', where) as RequestKind;
    const tool = text(row, 'tool', where);
    const role = textOrNull(row, 'required_role', where);
    const n = int(row, 'n', where);
    const rank = int(row, 'rn', where);
    const ms = int(row, 'ms', where);
    const key = JSON.stringify([kind, tool, role]);
    const entry = groups.get(key) ?? { kind, tool, role, decisions: n, p50Ms: 0, p90Ms: 0 };
    if (rank === Math.floor((n + 1) / 2)) entry.p50Ms = ms;
    if (rank === Math.floor((9 * n + 9) / 10)) entry.p90Ms = ms;
    groups.set(key, entry);
  }
  return [...groups.values()];
}

export function toReason(codec: PayloadCodec, row: Row): string | null {
  const decision = payload(codec, row, 'decision', `approvals(id=${String(row.id)})`) as { reason?: unknown };
  return typeof decision?.reason === 'string' ? decision.reason : null;
}
