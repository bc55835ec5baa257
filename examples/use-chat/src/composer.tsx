import { useState } from 'react';

/** The message box, and a button that asks the server what happened since (a decision in the inbox). */
export function Composer({ send, refresh }: { send: (text: string) => void; refresh: () => void }) {
  const [text, setText] = useState('');
  return (
    <>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          send(text);
          setText('');
        }}
      >
        <input aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Send</button>
      </form>
      <button type="button" onClick={refresh}>
        Check for updates
      </button>
    </>
  );
}
