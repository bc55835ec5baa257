import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ServerEnv } from '../server-context.ts';
import { html } from './html.ts';
import { page } from './layout.ts';

export function errorPage(c: Context<ServerEnv>, status: ContentfulStatusCode, message: string): Response {
  const caller = c.get('caller');
  const body = html`<h1>${status === 404 ? 'Not found' : status === 403 || status === 405 ? 'Not allowed' : 'Something went wrong'}</h1>
    <p role="alert">${message}</p>
    <p><a href="/">Back to the inbox</a></p>`;
  return c.html(
    page({
      title: 'Error',
      section: 'inbox',
      body,
      identity: caller?.identity ?? null,
      csrf: caller?.csrf ?? null,
    }),
    status,
  );
}
