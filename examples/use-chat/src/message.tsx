import type { UIMessage } from 'ai';
import { Part } from './part.tsx';

/** A message's parts in order. They are only ever appended to, so a part's index is its identity. */
export function Message({ message, approve }: { message: UIMessage; approve: (approvalId: string) => void }) {
  return (
    <article className={message.role}>
      {message.parts.map((part, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: parts are append-only and have no id of their own.
        <Part key={index} part={part} approve={approve} />
      ))}
    </article>
  );
}
