import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { SessionSnapshot } from './store.ts';

/**
 * An import must leave the session as a run would have: contiguous message seqs matching
 * the count, and every request and ledger row belonging to the session being imported.
 */
export function assertSnapshotConsistent(snapshot: SessionSnapshot): void {
  const { session, messages, approvals, executions } = snapshot;
  const problem = (detail: string) =>
    new InvalidInputError(`The snapshot of session ${session.id} is inconsistent: ${detail}.`, {
      hint: 'Import a snapshot exactly as exportSession produced it.',
    });
  if (session.messageCount !== messages.length) {
    throw problem(`messageCount is ${session.messageCount} but it holds ${messages.length} messages`);
  }
  messages.forEach((message, index) => {
    if (message.seq !== index) throw problem(`message ${index} has seq ${message.seq}`);
  });
  for (const approval of approvals) {
    if (approval.session !== session.id) {
      throw problem(`request ${approval.id} belongs to ${approval.session}`);
    }
  }
  for (const execution of executions) {
    if (execution.session !== session.id) {
      throw problem(`ledger row ${execution.requestId} belongs to ${execution.session}`);
    }
  }
}
