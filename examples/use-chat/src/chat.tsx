import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { useState } from 'react';
import { Message } from './message.tsx';

export function Chat() {
  const { messages, sendMessage, addToolApprovalResponse, error } = useChat({
    transport: new DefaultChatTransport({ api: '/chat/api/ui' }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [text, setText] = useState('');
  const approve = (id: string) => addToolApprovalResponse({ id, approved: true });
  return (
    <main>
      {messages.map((m) => (
        <Message key={m.id} message={m} approve={approve} />
      ))}
      {error && <p role="alert">{error.message}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          sendMessage({ text });
          setText('');
        }}
      >
        <input aria-label="Message" value={text} onChange={(e) => setText(e.target.value)} />
        <button type="submit">Send</button>
      </form>
      <button type="button" onClick={() => sendMessage()}>
        Check for updates
      </button>
    </main>
  );
}
