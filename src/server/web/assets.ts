import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import type { ServerEnv } from '../server-context.ts';

const types: Record<string, string> = {
  'app.css': 'text/css; charset=utf-8',
  'inbox.js': 'text/javascript; charset=utf-8',
  'chat.js': 'text/javascript; charset=utf-8',
  'login.js': 'text/javascript; charset=utf-8',
};

/** The stylesheet and the small scripts, read once; no bundler, no build step. */
export function assetRoutes(app: Hono<ServerEnv>): void {
  const files = new Map(
    Object.keys(types).map((name) => [
      name,
      readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8'),
    ]),
  );
  app.get('/assets/:name', (c) => {
    const name = c.req.param('name');
    const body = files.get(name);
    const type = types[name];
    if (body === undefined || type === undefined) return c.body(null, 404);
    return c.body(body, 200, { 'content-type': type, 'cache-control': 'no-cache' });
  });
}
