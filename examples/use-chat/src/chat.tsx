import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Composer } from './composer.tsx';
import { Message } from './message.tsx';

export function Chat() {
  const { messages, sendMessage, addToolApprovalResponse, error } = useChat({
    transport: new DefaultChatTransport({ api: '/chat/api/ui' }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const approve = (id: string) => addToolApprovalResponse({ id, approved: true });
  return (
    <main>
      {messages.map((m) => (
        <Message key={m.id} message={m} approve={approve} />
      ))}
      {error && <p role="alert">{error.message}</p>}
      <Composer send={(text) => sendMessage({ text })} refresh={() => sendMessage()} />
    </main>
  );
}
