import type { DecisionKind, RequestKind } from '../../core/approval.ts';

/** The window of decisions counted: `since <= decision time < until` (ISO-8601). */
export interface StatsQuery {
  since: string;
  until: string;
}

/** Time from raised to decided by a person, per tool (or port) and required role. */
export interface DecisionTimes {
  kind: RequestKind;
  tool: string;
  role: string | null;
  decisions: number;
  /** Nearest-rank percentiles, whole milliseconds. */
  p50Ms: number;
  p90Ms: number;
}

export interface ApproverCount {
  approver: string;
  approved: number;
  rejected: number;
  answered: number;
}

export interface ReasonCount {
  reason: string;
  count: number;
}

/**
 * What a team's decisions looked like over a window: the numbers of `/v1/stats` and the
 * inbox's stats page. Built from the decided rows' plain columns (decided_at, decided_by,
 * decided_kind) on an index of decided rows; only the reasons come from the decisions
 * themselves, read from the latest REASON_SAMPLE person rejections.
 */
export interface DecisionStats {
  since: string;
  until: string;
  /** Every request decided in the window, by how it ended (a person, a rule, expiry, moved on). */
  decided: { approved: number; rejected: number; answered: number; expired: number };
  /** Person decisions only, most decisions first. */
  timeToDecision: DecisionTimes[];
  rejections: {
    total: number;
    /** By who or what rejected: `person`, `moved-on` (a new message), … */
    byKind: Array<{ kind: DecisionKind; count: number }>;
    /** A person's reasons, most frequent first (at most 10), from the latest `reasonsFrom` rejections. */
    reasons: ReasonCount[];
    reasonsFrom: number;
  };
  expiries: { total: number; byTool: Array<{ kind: RequestKind; tool: string; count: number }> };
  /** Person decisions per approver, most first. */
  approvers: ApproverCount[];
}

/** Decision numbers over a window, for every request book (see DecisionStats). */
export interface DecisionStatsPort {
  decisionStats(query: StatsQuery): Promise<DecisionStats>;
}
