import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ServerEnv } from '../server-context.ts';
import { html } from './html.ts';
import { page } from './layout.ts';
import { timeZoneOf } from './local-time.ts';
import { notFoundText, refusalText } from './people-messages.ts';

const headings: Partial<Record<number, string>> = {
  404: 'Not found',
  403: 'Not allowed',
  405: 'Not allowed',
  409: 'Already decided',
  410: 'Too late',
  429: 'Too many attempts',
  503: 'Try again in a moment',
};

/**
 * An error as a page for a person: what happened and what to do, never a developer's hint
 * (the API keeps those). `code` is the stable error code when the error had one; a page the
 * router did not find, and a request that does not exist, both say where to look instead.
 */
export function errorPage(
  c: Context<ServerEnv>,
  status: ContentfulStatusCode,
  message: string,
  code?: string,
): Response {
  const caller = c.get('caller');
  const request = /^\/(?:requests|approvals|inbox\/(?:rows|pane))\/([^/]+)$/.exec(c.req.path)?.[1] ?? null;
  const words =
    status === 404
      ? notFoundText(request === null ? null : decodeURIComponent(request))
      : code
        ? refusalText({ code, message }, null, { name: caller?.identity.name ?? '', timeZone: timeZoneOf(c) })
        : message;
  const body = html`<h1>${headings[status] ?? 'Something went wrong'}</h1>
    <p role="alert">${words}</p>
    <p><a href="/">Pending requests</a>${caller ? html` · <a href="/history">History</a>` : ''}</p>`;
  return c.html(
    page({
      title: headings[status] ?? 'Error',
      section: 'inbox',
      body,
      identity: caller?.identity ?? null,
      csrf: caller?.csrf ?? null,
    }),
    status,
  );
}
