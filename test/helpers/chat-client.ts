import { SignJWT } from 'jose';

export const chatSecret = 'test-chat-secret-0123456789abcdefghijklmnop';

/** A customer token as a host application signs it; `claims` may override or add anything. */
export function customerToken(
  customer: string,
  options: { expiresAtMs?: number; claims?: Record<string, unknown>; secret?: string; alg?: string } = {},
): Promise<string> {
  const exp = Math.floor((options.expiresAtMs ?? Date.now() + 3_600_000) / 1000);
  return new SignJWT({ sub: customer, exp, ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .sign(new TextEncoder().encode(options.secret ?? chatSecret));
}

/** A customer's browser, reduced to a cookie jar, against a server on loopback. */
export interface ChatClient {
  cookie: string | null;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  /** Posts a form to /chat/send with this page's CSRF token (unless `fields.csrf` is given). */
  send(fields: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  /** The CSRF token of the chat page, read as the page would carry it. */
  csrf(): Promise<string>;
}

export function chatClient(base: string, cookie: string | null = null): ChatClient {
  const client: ChatClient = {
    cookie,
    get: (path, headers = {}) =>
      fetch(`${base}${path}`, {
        redirect: 'manual',
        headers: { accept: 'text/html', ...(client.cookie ? { cookie: client.cookie } : {}), ...headers },
      }),
    async csrf() {
      const page = await (await client.get('/chat')).text();
      return /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    },
    async send(fields, headers = {}) {
      const csrf = fields.csrf ?? (await client.csrf());
      return fetch(`${base}/chat/send`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'text/html',
          ...(client.cookie ? { cookie: client.cookie } : {}),
          ...headers,
        },
        body: new URLSearchParams({ ...fields, csrf }).toString(),
      });
    },
  };
  return client;
}

/** Opens the sign-in link; returns the cookie the server set (name=value) and the response. */
export async function openSignInLink(
  base: string,
  token: string,
  extra = '',
): Promise<{ response: Response; cookie: string | null }> {
  const response = await fetch(`${base}/chat?token=${encodeURIComponent(token)}${extra}`, {
    redirect: 'manual',
    headers: { accept: 'text/html' },
  });
  const set = response.headers.get('set-cookie');
  return { response, cookie: set ? set.split(';')[0]! : null };
}
