import type { ApprovalRequest, Decision } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import { bindArgs } from '../../core/canonical-json.ts';
import type { JsonValue } from '../../core/json.ts';
import type { Message } from '../../core/messages.ts';
import { waitingFields } from '../../core/request-defaults.ts';
import type { Store } from '../store.ts';
import { storedEvent } from './stored-event.ts';

export type StoreFactory = () => Promise<{
  store: Store;
  cleanup: () => Promise<void>;
  /**
   * Opens another store on the same database (another connection pool, another SQLite
   * connection), as a second process would. Backends without one (memory) leave it out.
   */
  sibling?: () => Promise<Store>;
}>;

/** What the cases of one port get: the port under test, fresh for every `it`. */
export interface PortContext<P> {
  /** The port of the current test, fresh for every `it`. */
  store(): P;
  /**
   * A second one on the current test's database, closed after the test; the same one where
   * the backend has no second connection (memory).
   */
  sibling(): Promise<P>;
}

export interface ConformanceContext extends PortContext<Store> {
  /** Another empty store of the same backend (for export/import); cleaned up by the caller. */
  fresh: StoreFactory;
  /** The backend encrypts effect previews (StoreInitializer.sealsEffects). */
  sealsEffects: boolean;
}

const epoch = Date.UTC(2030, 0, 1);

/** Fixed, well-separated timestamps: `at(5)` is five seconds after a fixed epoch. */
export function at(seconds: number): string {
  return new Date(epoch + seconds * 1000).toISOString();
}

export function atMs(seconds: number): number {
  return epoch + seconds * 1000;
}

export const user = (text: string): Message => ({ role: 'user', text });

export function assistantCalling(callId: string, tool: string, args: JsonValue): Message {
  return { role: 'assistant', text: '', calls: [{ id: callId, tool, args }] };
}

export function request(
  overrides: Partial<ApprovalRequest> & { id: string; session: string },
): ApprovalRequest {
  const args = overrides.args ?? { isbn: '978-0', quantity: 2, note: 'gift wrap' };
  return {
    agent: 'bookstore',
    callId: `call-${overrides.id}`,
    tool: 'place_order',
    effect: 'Orders 2 copies.',
    createdAt: at(10),
    expiresAt: at(100),
    status: 'pending',
    decision: null,
    raisedBy: null,
    kind: 'tool-call',
    run: null,
    customer: null,
    requiredRole: null,
    claim: null,
    escalatedTo: null,
    nudges: null,
    ...waitingFields(overrides.effect ?? 'Orders 2 copies.'),
    ...overrides,
    args,
    ...bindArgs(args),
  };
}

export function byPerson(verdict: 'approved' | 'rejected', seconds: number, by = 'alice'): Decision {
  return {
    verdict,
    by,
    reason: verdict === 'rejected' ? 'not today' : null,
    at: at(seconds),
    kind: 'person',
  };
}

export function event(
  kind: AuditEvent['kind'],
  session: string | null,
  requestId: string | null = null,
): AuditEvent {
  return storedEvent({
    kind,
    session,
    requestId,
    actor: 'tester',
    data: { note: `${kind} for ${session ?? 'none'}` },
  });
}

/** A session with the lease held by `owner`, ready for commitStep. */
export async function leasedSession(store: Store, id: string, owner = 'run-1'): Promise<void> {
  await store.ensureSession({ id, agent: 'bookstore', principal: 'alice', at: at(0) });
  const acquired = await store.acquireLease({ session: id, owner, untilMs: atMs(1000), nowMs: atMs(0) });
  if (!acquired) throw new Error(`test setup could not lease ${id}`);
}

/** Commits approvals in a step of their own, the way a run raises them. */
export async function raise(store: Store, session: string, approvals: ApprovalRequest[], owner = 'run-1') {
  const current = await store.getSession(session);
  if (current === null) throw new Error(`test setup: no session ${session}`);
  return store.commitStep({
    session,
    leaseOwner: owner,
    expectedMessageCount: current.messageCount,
    append: approvals.map((approval) => assistantCalling(approval.callId, approval.tool, approval.args)),
    approvals,
    at: at(10),
  });
}

/** A pending port request of `run`, as a checkpoint raises it. */
export function portRequest(
  run: string,
  id: string,
  overrides: Partial<ApprovalRequest> = {},
): ApprovalRequest {
  const args = overrides.args ?? { orderId: 1040, amount: 35, reason: 'Damaged cover' };
  return {
    id,
    kind: 'port',
    session: `wf.${run}`,
    run,
    agent: 'refund',
    callId: 'manager-approval',
    tool: 'manager-approval',
    effect: 'Refund 35.00 on order 1040.',
    createdAt: at(10),
    expiresAt: at(100),
    status: 'pending',
    decision: null,
    raisedBy: 'desk',
    customer: 'c-100',
    requiredRole: 'manager',
    claim: null,
    escalatedTo: null,
    nudges: null,
    ...waitingFields(overrides.effect ?? 'Refund 35.00 on order 1040.'),
    ...overrides,
    args,
    ...bindArgs(args),
  };
}

/** A person's answer to a port request. */
export function answeredBy(by: string, seconds: number, response: JsonValue = { approved: true }): Decision {
  return { verdict: 'answered', response, by, reason: null, at: at(seconds), kind: 'person' };
}
