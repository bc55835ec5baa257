import type { ApprovalRequest } from './approval.ts';
import type { ExecutionRecord } from './execution.ts';
import type { StoredMessage } from './messages.ts';
import type { SessionRecord } from './session.ts';

/** A whole session, as exported and imported between stores. */
export interface SessionSnapshot {
  session: SessionRecord;
  messages: StoredMessage[];
  approvals: ApprovalRequest[];
  executions: ExecutionRecord[];
}
