// One column list per table for both SQL backends, shared by the INSERTs and SELECTs so their
// order cannot drift (sql/values.ts and row-values.ts give values in the same order).
export const SESSION_COLUMNS = 'id, agent, principal, created_at, updated_at, message_count, batch';
export const APPROVAL_COLUMNS =
  'id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, decision, raised_by, kind, run, customer, required_role, claim_by, claim_until, escalated_to, nudges, next_nudge_at, effect_hash, editable, approvals_needed, partial_approvals, pending_edit, revision';
/**
 * Written beside APPROVAL_COLUMNS (never read back: `decision` is the record): the decision's
 * time, decider and kind in plain columns, so history pages and /v1/stats walk an index of
 * decided rows instead of decoding every decision.
 */
export const DECIDED_COLUMNS = 'decided_at, decided_by, decided_kind';
/** `$1, …, $n` for APPROVAL_COLUMNS (PostgreSQL's numbered parameters). */
export const APPROVAL_PLACEHOLDERS = APPROVAL_COLUMNS.split(',')
  .map((_, index) => `$${index + 1}`)
  .join(', ');
/** The placeholders of DECIDED_COLUMNS after APPROVAL_PLACEHOLDERS (PostgreSQL). */
export const DECIDED_PLACEHOLDERS = DECIDED_COLUMNS.split(',')
  .map((_, index) => `$${APPROVAL_COLUMNS.split(',').length + index + 1}`)
  .join(', ');
export const EXECUTION_COLUMNS =
  'request_id, session, call_id, tool, args, idempotency_key, status, result, attempts, started_at, finished_at';
export const AUDIT_COLUMNS =
  'seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash, erased_at';
/** What an append writes (erased_at starts null). */
export const AUDIT_INSERT_COLUMNS =
  'seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash';
export const RULE_COLUMNS =
  'id, session, tool, tool_identity, args_hash, source_request, created_at, created_by, revoked_at, revoked_by';
export const DELIVERY_COLUMNS =
  'id, kind, payload, created_at, status, attempts, next_at, claimed_by, last_error, finished_at';
export const WEB_SESSION_COLUMNS = 'id_hash, approver, created_at, expires_at';
