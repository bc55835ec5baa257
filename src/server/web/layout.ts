import type { Identity } from '../auth/identity.ts';
import type { Flash } from './flash-store.ts';
import { html, type SafeHtml } from './html.ts';

export type Section = 'inbox' | 'history' | 'stats' | 'audit' | 'chat' | 'login';

export interface PageOptions {
  title: string;
  section: Section;
  body: SafeHtml;
  identity?: Identity | null;
  csrf?: string | null;
  flash?: Flash | null;
  /** Scripts under /assets; pages work without them. */
  scripts?: string[];
  /** Data attributes for the page's script (e.g. the request a detail page shows). */
  data?: Record<string, string>;
  /** A page with a list beside a pane (the inbox, the history) uses the screen's width. */
  wide?: boolean;
}

const navItems: Array<{ section: Section; href: string; label: string }> = [
  { section: 'inbox', href: '/', label: 'Pending' },
  { section: 'history', href: '/history', label: 'History' },
  { section: 'stats', href: '/stats', label: 'Numbers' },
  { section: 'audit', href: '/audit', label: 'Audit' },
];

export function page(options: PageOptions): string {
  const { identity } = options;
  const nav =
    identity && options.section !== 'chat'
      ? html`<nav aria-label="Inbox">
          <ul>
            ${navItems.map(
              (item) =>
                html`<li><a href="${item.href}"${options.section === item.section ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
            )}
          </ul>
        </nav>
        <div class="who">
          <span>Signed in as <strong>${identity.name}</strong>${identity.roles.length ? ` (${identity.roles.join(', ')})` : ''}</span>
          ${
            identity.via === 'cookie' && options.csrf
              ? html`<form method="post" action="/logout" class="inline">
                  <input type="hidden" name="csrf" value="${options.csrf}">
                  <button type="submit" class="link">Sign out</button>
                </form>`
              : ''
          }
        </div>`
      : '';
  const data = Object.entries(options.data ?? {}).map(([key, value]) => html` data-${key}="${value}"`);
  const flash = options.flash
    ? html`<p class="flash ${options.flash.kind}" role="${options.flash.kind === 'error' ? 'alert' : 'status'}">${options.flash.text}</p>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · countersign</title>
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="${options.section === 'chat' ? '/chat' : '/'}">countersign</a>
  ${nav}
</header>
<main id="main"${options.wide ? html` class="wide"` : ''}${data}>
${flash}
<p id="live" class="visually-hidden" aria-live="polite"></p>
${options.body}
</main>
${(options.scripts ?? []).map((src) => html`<script src="/assets/${src}" defer></script>`)}
</body>
</html>`.value;
}
