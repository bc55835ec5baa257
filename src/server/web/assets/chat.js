// The customer chat page: when something happens in this conversation (a request is
// raised or decided, the agent answers), re-read the conversation from the server.
(() => {
  const log = document.getElementById('chat-log');
  const session = log?.dataset.session;
  if (!log || !session || !('EventSource' in window)) return;
  const query = new URLSearchParams({ session });
  let refreshing = Promise.resolve();
  const refresh = () => {
    refreshing = refreshing
      .then(async () => {
        const response = await fetch(`/chat/log?${query}`, { cache: 'no-store' });
        if (!response.ok) return;
        // Markup rendered and escaped by the server.
        log.innerHTML = await response.text();
        log.lastElementChild?.scrollIntoView({ block: 'end' });
      })
      .catch(() => undefined);
  };
  const source = new EventSource(`/chat/events?${query}`);
  let opened = false;
  // Requests and decisions missed while disconnected are replayed (Last-Event-ID), but the
  // agent's replies are not in the audit log: re-read the conversation on every reconnect.
  source.addEventListener('ready', () => {
    if (opened) refresh();
    opened = true;
  });
  for (const type of ['approval.requested', 'approval.decided', 'turn.finished', 'reload']) {
    source.addEventListener(type, refresh);
  }
  log.lastElementChild?.scrollIntoView({ block: 'end' });
})();
