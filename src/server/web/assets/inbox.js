// Progressive enhancement for the approval inbox: live arrivals and decisions (Server-Sent
// Events), ticking countdowns. Every action still works as a plain form without this file.
(() => {
  const main = document.getElementById('main');
  const live = document.getElementById('live');
  const list = document.getElementById('pending-list');
  const count = document.getElementById('pending-count');
  const pageKind = main?.dataset.page;

  const span = (ms) => {
    const s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400);
    const h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60);
    if (d > 0) return `${d}d ${h}h`;
    if (h > 0) return `${h}h ${m}m`;
    if (m > 0) return `${m}m ${s % 60}s`;
    return `${s}s`;
  };
  const tick = () => {
    const now = Date.now();
    for (const el of document.querySelectorAll('time[data-countdown]')) {
      const left = Date.parse(el.getAttribute('datetime')) - now;
      el.textContent = left > 0 ? span(left) : 'expired';
      el.classList.toggle('soon', left > 0 && left < 5 * 60 * 1000);
    }
    for (const el of document.querySelectorAll('time[data-age]')) {
      const ago = now - Date.parse(el.getAttribute('datetime'));
      el.textContent = ago < 1000 ? 'just now' : `${span(ago)} ago`;
    }
  };
  tick();
  setInterval(tick, 1000);

  const announce = (text) => {
    if (live) live.textContent = text;
  };
  const cards = () => (list ? list.querySelectorAll('article.card:not(.gone)') : []);
  const recount = () => {
    const n = cards().length;
    if (count) count.textContent = String(n);
    document.title = `${n ? `(${n}) ` : ''}Pending · countersign`;
    const empty = list?.querySelector('.empty');
    if (empty) empty.hidden = n > 0;
  };

  const insertCard = async (id) => {
    if (!list || document.getElementById(id)) return;
    const response = await fetch(`/inbox/cards/${encodeURIComponent(id)}`, { credentials: 'same-origin' });
    if (response.status !== 200 || document.getElementById(id)) return;
    // The server rendered and escaped this markup; it is parsed inert, then attached.
    const template = document.createElement('template');
    template.innerHTML = await response.text();
    list.append(template.content);
    recount();
    tick();
  };

  const markDecided = (id, text) => {
    const card = document.getElementById(id);
    if (card && list?.contains(card)) {
      card.classList.add('gone');
      const forms = card.querySelector('.decide');
      const note = document.createElement('p');
      note.className = 'note';
      note.textContent = text;
      if (forms) forms.replaceWith(note);
      else card.append(note);
      recount();
      setTimeout(() => card.remove(), 5000);
    }
    if (pageKind === 'detail' && main.dataset.request === id && main.dataset.status === 'pending') {
      const notice = document.getElementById('live-notice');
      if (notice) {
        notice.textContent = `${text} Reload to see the result.`;
        notice.hidden = false;
      }
    }
  };

  // A reconnecting EventSource sends Last-Event-ID and is replayed what it missed; when that
  // was too much, the server sends `reload` instead: the store is the record, so re-read it.
  const sync = async () => {
    if (!list) return;
    const response = await fetch('/v1/approvals?status=pending', { credentials: 'same-origin' });
    if (!response.ok) return;
    const pending = await response.json();
    const ids = new Set(pending.map((view) => view.id));
    for (const card of cards()) if (!ids.has(card.id)) markDecided(card.id, 'No longer pending.');
    for (const view of pending) await insertCard(view.id);
  };

  if (!('EventSource' in window) || (pageKind !== 'pending' && pageKind !== 'detail')) return;
  const source = new EventSource('/v1/events');
  source.addEventListener('reload', () => {
    sync().catch(() => undefined);
  });
  source.addEventListener('approval.requested', (message) => {
    const event = JSON.parse(message.data);
    insertCard(event.approval.id)
      .then(() => announce(`New request: ${event.approval.tool} for session ${event.approval.session}.`))
      .catch(() => undefined);
  });
  source.addEventListener('approval.decided', (message) => {
    const event = JSON.parse(message.data);
    const verdict = event.verdict.charAt(0).toUpperCase() + event.verdict.slice(1);
    const text = `${verdict} by ${event.by}.`;
    markDecided(event.requestId, text);
    announce(`${event.requestId}: ${text}`);
  });
})();
