// Progressive enhancement for the approval inbox. Without this file every link and form
// still works (the pane beside the list is a link, deciding is a form post). With it:
// the pane opens in place, decisions need no page load and focus moves to the next request,
// the keyboard shortcuts listed on the page work, and arrivals and decisions show live
// (Server-Sent Events). Times tick; the browser's time zone is told to the server (a cookie)
// so the pages it renders show the approver's local times.
(() => {
  const main = document.getElementById('main');
  const live = document.getElementById('live');
  const list = document.getElementById('pending-list');
  const count = document.getElementById('pending-count');
  const pane = document.getElementById('pane');
  const arrivals = document.getElementById('arrivals');
  const table = list?.closest('table');
  const pageKind = main?.dataset.page;

  try {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const cookie = `countersign_tz=${encodeURIComponent(zone)}`;
    if (zone && !document.cookie.split('; ').includes(cookie))
      // biome-ignore lint/suspicious/noDocumentCookie: a plain cookie works in every browser; the value is a checked zone name
      document.cookie = `${cookie}; path=/; samesite=strict; max-age=31536000`;
  } catch {}

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
      el.closest('tr')?.classList.toggle('expiring', left < 15 * 60 * 1000);
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
  const rows = () => (list ? [...list.querySelectorAll('tr.row:not(.gone)')] : []);
  const current = () => list?.querySelector('tr.row.current') ?? null;
  const setCount = (delta) => {
    if (!count || !/^\d+$/.test(count.textContent.replace(/,/g, ''))) return;
    const n = Math.max(0, Number(count.textContent.replace(/,/g, '')) + delta);
    count.textContent = n.toLocaleString('en-US');
    document.title = `${n ? `(${n.toLocaleString('en-US')}) ` : ''}Pending · countersign`;
    for (const total of document.querySelectorAll('.pager .total')) total.textContent = count.textContent;
  };
  const showEmpty = () => {
    const n = rows().length;
    const empty = document.querySelector('.list-pane .empty');
    if (empty) empty.hidden = n > 0;
    // "Showing 1–49 of 499": the rows on this page as they are now.
    const showing = document.querySelector('.list-pane .pager .showing');
    const total = count?.textContent ?? '';
    if (showing?.dataset.offset) {
      const from = Number(showing.dataset.offset);
      showing.textContent = n
        ? `Showing ${from.toLocaleString('en-US')}–${(from + n - 1).toLocaleString('en-US')} of ${total} (page ${showing.dataset.page})`
        : `Showing none of ${total} (page ${showing.dataset.page})`;
    }
  };
  const listAddress = () => {
    const url = new URL(location.href);
    url.searchParams.delete('selected');
    url.searchParams.delete('flash');
    url.hash = '';
    return url.pathname + url.search;
  };

  /** Shows a request in the pane: the same markup the page renders for ?selected=. */
  const open = async (row, { focus = true } = {}) => {
    if (!row || !pane) return;
    for (const other of list.querySelectorAll('tr.row.current')) {
      other.classList.remove('current');
      other.removeAttribute('aria-current');
    }
    row.classList.add('current');
    row.setAttribute('aria-current', 'true');
    const link = row.querySelector('a.open');
    if (focus) link?.focus();
    const id = row.dataset.request;
    main.dataset.request = id;
    const url = new URL(location.href);
    url.searchParams.set('selected', id);
    url.searchParams.delete('flash');
    history.replaceState(null, '', url.pathname + url.search);
    const response = await fetch(
      `/inbox/pane/${encodeURIComponent(id)}?return=${encodeURIComponent(listAddress())}`,
      { credentials: 'same-origin' },
    );
    if (!response.ok || main.dataset.request !== id) return;
    // The server rendered and escaped this markup; it is parsed inert, then attached.
    const template = document.createElement('template');
    template.innerHTML = await response.text();
    pane.replaceChildren(template.content);
    tick();
  };

  const move = (step) => {
    const all = rows();
    if (all.length === 0) return;
    const at = all.indexOf(current());
    const next = all[Math.min(all.length - 1, Math.max(0, at === -1 ? 0 : at + step))];
    open(next).catch(() => undefined);
  };

  /** A row is done: it leaves the list, and the next one (or the previous) opens. */
  const removeRow = (id, { advance }) => {
    const row = document.getElementById(id);
    if (!row || !list?.contains(row) || row.classList.contains('gone')) return false;
    const all = rows();
    const at = all.indexOf(row);
    const wasCurrent = row.classList.contains('current');
    row.classList.add('gone');
    row.remove();
    setCount(-1);
    showEmpty();
    if (advance && wasCurrent) {
      const rest = rows();
      const next = rest[Math.min(at, rest.length - 1)];
      if (next) open(next).catch(() => undefined);
      else if (pane) {
        pane.replaceChildren();
        const p = document.createElement('p');
        p.className = 'hint';
        p.textContent = 'Nothing left on this page.';
        pane.append(p);
        pane.focus();
      }
    }
    return true;
  };

  const paneNotice = (text, ok) => {
    const notice = pane?.querySelector('.live-notice') ?? document.querySelector('.live-notice');
    if (!notice) return;
    notice.textContent = text;
    notice.className = `live-notice flash ${ok ? 'ok' : 'error'}`;
    notice.setAttribute('role', ok ? 'status' : 'alert');
    notice.hidden = false;
  };
  const pageNotice = (text, ok) => {
    if (!arrivals) return;
    arrivals.textContent = text;
    arrivals.className = `flash ${ok ? 'ok' : 'error'}`;
    arrivals.setAttribute('role', ok ? 'status' : 'alert');
    arrivals.hidden = false;
  };

  // Decisions this page sent and has no answer for yet: their live event is not someone else's.
  const inFlight = new Set();

  /** Posts a form as the page would, asking for the answer as JSON. */
  const post = async (form, submitter) => {
    // Read before any button is disabled: a disabled submitter's name and value are not sent.
    const body = new FormData(form, submitter);
    await null;
    // The attribute, not form.action: a field named "action" would shadow the property.
    const response = await fetch(form.getAttribute('action'), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
      body: new URLSearchParams(body),
    });
    const type = response.headers.get('content-type') ?? '';
    if (!type.includes('application/json')) {
      return { ok: false, text: `The inbox answered ${response.status}; reload the page and try again.` };
    }
    return response.json();
  };

  // "Edit, then approve": the preview of the change replaces the edit form in the pane.
  pane?.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains('edit-form')) return;
    event.preventDefault();
    fetch(`${form.getAttribute('action')}?fragment=1`, {
      method: 'POST',
      credentials: 'same-origin',
      body: new URLSearchParams(new FormData(form)),
    })
      .then(async (response) => {
        const template = document.createElement('template');
        template.innerHTML = await response.text();
        const holder = form.closest('details.edit') ?? form;
        holder.parentElement?.querySelector('.edit-result')?.remove();
        const result = document.createElement('div');
        result.className = 'edit-result';
        result.append(template.content);
        holder.after(result);
        (result.querySelector('button.approve') ?? result.querySelector('[role="alert"]'))?.focus?.();
      })
      .catch(() => paneNotice('The inbox could not be reached; nothing was sent. Try again.', false));
  });

  // Claiming (or releasing) from the pane: the row and the pane show the claim at once.
  pane?.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains('claim-form')) return;
    if (pageKind !== 'pending') return;
    event.preventDefault();
    const id = form.closest('[data-request]')?.dataset.request;
    post(form, event.submitter)
      .then((result) => {
        pageNotice(result.text, result.ok);
        if (id) refresh(id, '').catch(() => undefined);
      })
      .catch(() => pageNotice('The inbox could not be reached; nothing was sent. Try again.', false));
  });

  // Decisions from the pane: no page load; the next request opens and takes the focus.
  pane?.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains('decide-form')) return;
    if (pageKind !== 'pending') return;
    event.preventDefault();
    const id = form.closest('[data-request]')?.dataset.request;
    const sent = post(form, event.submitter);
    for (const button of form.querySelectorAll('button')) button.disabled = true;
    if (id) inFlight.add(id);
    sent
      .then((result) => {
        if (id) inFlight.delete(id);
        // Said once: the notice is a status region (or an alert), so it is announced.
        if (result.ok && id && result.waiting) {
          // One approval of several: the request stays (others still decide it); move on.
          pageNotice(result.text, true);
          move(1);
          refresh(id, '').catch(() => undefined);
        } else if (result.ok && id) {
          pageNotice(result.text, true);
          removeRow(id, { advance: true });
        } else {
          paneNotice(result.text, false);
          for (const button of form.querySelectorAll('button')) button.disabled = false;
        }
      })
      .catch(() => {
        if (id) inFlight.delete(id);
        paneNotice('The inbox could not be reached; nothing was sent. Try again.', false);
        for (const button of form.querySelectorAll('button')) button.disabled = false;
      });
  });

  // The bulk decision: each selected request is decided on its own; the answer says how each went.
  const bulk = document.getElementById('bulk');
  bulk?.addEventListener('submit', (event) => {
    event.preventDefault();
    post(bulk, event.submitter)
      .then((result) => {
        pageNotice(result.text, result.ok);
        const open = current()?.dataset.request;
        for (const one of result.results ?? []) if (one.ok) removeRow(one.id, { advance: one.id === open });
        if (result.ok) document.getElementById('bulk-reason').value = '';
      })
      .catch(() => pageNotice('The inbox could not be reached; nothing was sent. Try again.', false));
  });

  // Opening a request from the list, without a page load.
  list?.addEventListener('click', (event) => {
    const link = event.target.closest?.('a[data-open]');
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    open(link.closest('tr'))
      .then(() => {
        // On a narrow screen the pane is under the list: bring it into view, as the link's #pane would.
        if (window.matchMedia('(max-width: 900px)').matches) pane?.scrollIntoView({ block: 'start' });
      })
      .catch(() => undefined);
  });

  // The shortcuts the page lists (shortcuts.ts): the keys are read from that list.
  const keys = new Map(
    [...document.querySelectorAll('#shortcut-keys [data-key]')].map((el) => [
      el.dataset.key,
      el.dataset.action,
    ]),
  );
  const typing = (el) =>
    el instanceof HTMLElement &&
    (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName)) &&
    !(el instanceof HTMLInputElement && el.type === 'checkbox');
  const inPane = (selector) => pane?.querySelector(selector);
  document.addEventListener('keydown', (event) => {
    if (pageKind !== 'pending' || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === 'Escape') event.target.blur();
      return;
    }
    const action =
      event.key === 'ArrowDown' ? 'next' : event.key === 'ArrowUp' ? 'previous' : keys.get(event.key);
    if (!action) return;
    const act = {
      next: () => move(1),
      previous: () => move(-1),
      approve: () => inPane('[data-shortcut="approve"]')?.click(),
      reject: () => inPane('[data-shortcut="reject"]')?.focus(),
      claim: () => inPane('[data-shortcut="claim"]')?.click(),
      edit: () => {
        const edit = inPane('[data-shortcut="edit"]');
        if (edit instanceof HTMLDetailsElement) edit.open = true;
        edit?.querySelector('input:not([type="hidden"]), textarea')?.focus();
      },
      select: () => {
        const box = current()?.querySelector('input[type="checkbox"]');
        if (box) box.checked = !box.checked;
      },
      search: () => document.getElementById('search')?.focus(),
    }[action];
    if (!act) return;
    event.preventDefault();
    act();
  });

  // Requests decided since the page loaded, and arrivals whose row is being fetched. The live
  // stream can tell of a decision while a row for it is still on its way (fetched while it
  // waited): that row is stale and must not be drawn, and the count it added taken back.
  const leftTheList = new Set();
  const arriving = new Set();
  // Arrivals join the list when this view would show them at the end (unfiltered, oldest
  // first, last page); otherwise the page says new requests arrived, with a link.
  const insertRow = async (id) => {
    if (!list || document.getElementById(id) || arriving.has(id) || leftTheList.has(id)) return false;
    const fits =
      table?.dataset.filtered === 'no' && table.dataset.sort === 'oldest' && table.dataset.last === 'yes';
    setCount(1);
    showEmpty();
    if (!fits) {
      pageNotice('New requests arrived. ', true);
      const link = document.createElement('a');
      link.href = listAddress();
      link.textContent = 'Refresh the list';
      arrivals.append(link);
      return false;
    }
    arriving.add(id);
    let row = null;
    try {
      const response = await fetch(`/inbox/rows/${encodeURIComponent(id)}`, { credentials: 'same-origin' });
      if (response.status === 200) {
        const template = document.createElement('template');
        template.innerHTML = `<table><tbody>${await response.text()}</tbody></table>`;
        row = template.content.querySelector('tr');
      }
    } finally {
      arriving.delete(id);
    }
    if (!row || leftTheList.has(id) || document.getElementById(id)) {
      // Not drawn (decided meanwhile, or already there): it is not waiting on this page.
      if (!document.getElementById(id)) {
        setCount(-1);
        showEmpty();
      }
      return false;
    }
    list.append(row);
    showEmpty();
    tick();
    if (!current()) open(row, { focus: false }).catch(() => undefined);
    return true;
  };

  const markDecided = (id, text) => {
    leftTheList.add(id);
    if (inFlight.has(id)) return;
    if (
      pageKind === 'pending' &&
      document.getElementById(id) &&
      list?.contains(document.getElementById(id))
    ) {
      const isOpen = main.dataset.request === id;
      removeRow(id, { advance: false });
      // The open request is drawn again as it now stands (decided: no buttons), with who did it.
      if (isOpen) refresh(id, `${text} It left the list.`).catch(() => undefined);
    }
    if (pageKind === 'detail' && main.dataset.request === id && main.dataset.status === 'pending') {
      paneNotice(`${text} Reload to see the result.`, true);
    }
  };

  if (!('EventSource' in window) || (pageKind !== 'pending' && pageKind !== 'detail')) return;
  // From the log's position the page was rendered at: nothing committed in between is missed.
  const seq = main.dataset.seq;
  const source = new EventSource(`/v1/events${seq && /^\d+$/.test(seq) ? `?after=${seq}` : ''}`);
  // A reconnecting EventSource sends Last-Event-ID and is replayed what it missed; when that
  // was too much, the server sends `reload`: the store is the record, so say the list is stale.
  source.addEventListener('reload', () => {
    if (pageKind !== 'pending') return;
    pageNotice('The list may be out of date. ', false);
    const link = document.createElement('a');
    link.href = listAddress();
    link.textContent = 'Refresh the list';
    arrivals?.append(link);
  });
  source.addEventListener('approval.requested', (message) => {
    const event = JSON.parse(message.data);
    if (pageKind !== 'pending') return;
    insertRow(event.approval.id)
      .then(() => announce(`New request: ${event.approval.tool}.`))
      .catch(() => undefined);
  });
  // A request that changed but still waits (an approval of a quorum, a claim, a reminder, an
  // escalation, an expiry warning): its row is drawn again, and so is the pane when it shows
  // it and nobody is typing there.
  let paneAsks = 0;
  const refresh = async (id, text) => {
    const row = document.getElementById(id);
    if (pageKind === 'pending' && row && list?.contains(row)) {
      const response = await fetch(`/inbox/rows/${encodeURIComponent(id)}`, { credentials: 'same-origin' });
      if (response.status === 200) {
        const template = document.createElement('template');
        template.innerHTML = `<table><tbody>${await response.text()}</tbody></table>`;
        const fresh = template.content.querySelector('tr');
        if (fresh && !leftTheList.has(id) && list.contains(row)) {
          const wasCurrent = row.classList.contains('current');
          const box = row.querySelector('input[type="checkbox"]');
          const freshBox = fresh.querySelector('input[type="checkbox"]');
          if (box && freshBox) freshBox.checked = box.checked;
          if (wasCurrent) {
            fresh.classList.add('current');
            fresh.setAttribute('aria-current', 'true');
          }
          const focused = row.contains(document.activeElement);
          row.replaceWith(fresh);
          if (focused) fresh.querySelector('a.open')?.focus();
          tick();
        }
      }
    }
    if (main.dataset.request !== id || inFlight.has(id)) return;
    const busy = pane?.contains(document.activeElement) && typing(document.activeElement);
    if (pageKind === 'pending' && pane && !busy) {
      // Answers can come back out of order (an escalation's, then the decision's): only the
      // last one asked for is drawn, so an older, still-waiting pane never covers a newer one.
      const asked = ++paneAsks;
      const response = await fetch(
        `/inbox/pane/${encodeURIComponent(id)}?return=${encodeURIComponent(listAddress())}`,
        { credentials: 'same-origin' },
      );
      const body = response.ok ? await response.text() : '';
      // A newer answer was asked for: it draws the pane and says what happened; this one's
      // words ("ann claimed it.") would be as stale as its pane.
      if (asked !== paneAsks) return;
      if (response.ok && main.dataset.request === id) {
        const template = document.createElement('template');
        template.innerHTML = body;
        pane.replaceChildren(template.content);
        tick();
      }
    }
    if (text) paneNotice(text, true);
  };
  const changes = {
    'approval.progressed': (e) => `${e.by} approved: ${e.approvals} of ${e.approvalsNeeded} approvals.`,
    'request.claimed': (e) => `${e.by} claimed it.`,
    'request.released': (e) => `${e.by} released it.`,
    'request.reminder': () => 'It is overdue.',
    'request.escalated': (e) => `It was escalated${e.escalatedTo ? ` to ${e.escalatedTo}` : ''}.`,
    'request.expiring': () => 'It expires soon.',
  };
  for (const [type, words] of Object.entries(changes)) {
    source.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
      refresh(event.requestId, words(event)).catch(() => undefined);
    });
  }

  source.addEventListener('approval.decided', (message) => {
    const event = JSON.parse(message.data);
    const verdict = event.verdict.charAt(0).toUpperCase() + event.verdict.slice(1);
    const text = `${verdict} by ${event.by}.`;
    markDecided(event.requestId, text);
  });
})();
