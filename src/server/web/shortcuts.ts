import { html, type SafeHtml } from './html.ts';

/**
 * The inbox's keyboard shortcuts, written once: the page lists them from here and the script
 * reads the keys from the list's `data-key` attributes, so what the page says is what works.
 */
export const shortcuts: ReadonlyArray<{ key: string; label: string; action: string }> = [
  { key: 'j', label: 'j or ↓', action: 'next' },
  { key: 'k', label: 'k or ↑', action: 'previous' },
  { key: 'a', label: 'a', action: 'approve' },
  { key: 'r', label: 'r', action: 'reject' },
  { key: 'c', label: 'c', action: 'claim' },
  { key: 'e', label: 'e', action: 'edit' },
  { key: 'x', label: 'x', action: 'select' },
  { key: '/', label: '/', action: 'search' },
];

const words: Record<string, string> = {
  next: 'next request',
  previous: 'previous request',
  approve: 'approve the open request',
  reject: 'reject it (type the reason, then Enter)',
  claim: 'claim it (or release your claim)',
  edit: 'edit its arguments, when the tool allows',
  select: 'select it for a bulk decision',
  search: 'search',
};

export const shortcutList: SafeHtml = html`<details class="shortcuts">
  <summary>Keyboard shortcuts</summary>
  <dl id="shortcut-keys">
    ${shortcuts.map(
      (s) =>
        html`<div data-key="${s.key}" data-action="${s.action}"><dt><kbd>${s.label}</kbd></dt><dd>${words[s.action] ?? s.action}</dd></div>`,
    )}
  </dl>
  <p class="hint">Shortcuts wait while you type in a field. After a decision the next request opens.</p>
</details>`;
