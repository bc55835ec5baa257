import type { ExecutionFilter } from '../ports/ledger.ts';
import { EXECUTION_COLUMNS } from './columns.ts';

/**
 * listExecutions as SQL for both backends: equality filters, then the keyset
 * `(started_at, request_id) > (after)` and LIMIT, in the order of `executions_by_started`.
 */
export function executionPageSql(
  table: string,
  param: (index: number) => string,
  filter: ExecutionFilter,
): { text: string; values: Array<string | number> } {
  const values: Array<string | number> = [];
  const bind = (value: string | number) => {
    values.push(value);
    return param(values.length);
  };
  const where: string[] = [];
  if (filter.session !== undefined) where.push(`session = ${bind(filter.session)}`);
  if (filter.status !== undefined) where.push(`status = ${bind(filter.status)}`);
  if (filter.after !== undefined)
    where.push(
      `(started_at, request_id) > (${bind(filter.after.startedAt)}, ${bind(filter.after.requestId)})`,
    );
  const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
  const limit = filter.limit === undefined ? '' : ` LIMIT ${bind(filter.limit)}`;
  return {
    text: `SELECT ${EXECUTION_COLUMNS} FROM ${table}${clause} ORDER BY started_at, request_id${limit}`,
    values,
  };
}
