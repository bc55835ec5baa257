// One column list per table, shared by the INSERTs and SELECTs so their order cannot drift.
export const SESSION_COLUMNS = 'id, agent, principal, created_at, updated_at, message_count, batch';
export const APPROVAL_COLUMNS =
  'id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, decision, raised_by, kind, run, customer, required_role';
export const EXECUTION_COLUMNS =
  'request_id, session, call_id, tool, args, idempotency_key, status, result, attempts, started_at, finished_at';
export const AUDIT_COLUMNS = 'seq, at, kind, session, request_id, actor, data, prev_hash, hash';
export const RULE_COLUMNS =
  'id, session, tool, tool_identity, args_hash, source_request, created_at, created_by, revoked_at, revoked_by';
