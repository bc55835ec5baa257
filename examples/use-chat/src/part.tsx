import type { UIMessage } from 'ai';

type UIPart = UIMessage['parts'][number];

/** One part of a message: text, or a tool call with its approval state and result. */
export function Part({ part, approve }: { part: UIPart; approve: (approvalId: string) => void }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type !== 'dynamic-tool') return null;
  return (
    <section className="tool" data-tool={part.toolName} data-state={part.state}>
      <h2>{part.toolName}</h2>
      <pre>{JSON.stringify(part.input)}</pre>
      {part.state === 'approval-requested' && (
        <div className="approval">
          <p>Waiting for approval: {part.approval.requestReason}</p>
          <button type="button" onClick={() => approve(part.approval.id)}>
            Approve it myself
          </button>
        </div>
      )}
      {part.state === 'output-available' && <p className="result">Result: {JSON.stringify(part.output)}</p>}
      {part.state === 'output-denied' && <p className="result">Rejected</p>}
      {part.state === 'output-error' && <p className="result">Failed: {part.errorText}</p>}
    </section>
  );
}
