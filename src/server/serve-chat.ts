import { randomBytes } from 'node:crypto';
import { ConfigError } from '../core/errors/config-error.ts';
import { signCustomerToken } from './auth/customer-token.ts';

/** How long the demo link `npm start` prints keeps a customer signed in. */
export const DEMO_CHAT_LINK_MS = 2 * 60 * 60 * 1000;

export interface ServeChat {
  secret: string;
  /** Set only when the secret was generated for this start: a link nobody else could mint. */
  demo: { customer: string; token: string; expiresAtMs: number } | null;
}

/**
 * The chat of `serve --chat`: the configured secret, or for an app with a demo customer and
 * no secret, a fresh one and a signed link for that customer. A real app without a secret
 * is refused: nobody could sign in to its chat.
 */
export async function serveChat(input: {
  secret: string | undefined;
  demoCustomer: string | undefined;
  nowMs: number;
}): Promise<ServeChat> {
  if (input.secret) return { secret: input.secret, demo: null };
  if (!input.demoCustomer)
    throw new ConfigError('--chat needs COUNTERSIGN_CHAT_SECRET, and it is not set.', {
      hint: 'Set it to the secret your application signs customer tokens with (at least 32 characters, e.g. from `openssl rand -base64 32`; see docs/server.md), or leave --chat off.',
    });
  const secret = randomBytes(32).toString('base64url');
  const demo = { customer: input.demoCustomer, expiresAtMs: input.nowMs + DEMO_CHAT_LINK_MS };
  const token = await signCustomerToken(new TextEncoder().encode(secret), demo);
  return { secret, demo: { ...demo, token } };
}

export function chatBannerLines(base: string, chat: ServeChat): string[] {
  if (!chat.demo) return [`  Chat:  ${base}/chat (customers arrive signed in, through links your app signs)`];
  const until = new Date(chat.demo.expiresAtMs).toISOString().slice(11, 16);
  return [
    `  Chat:  ${base}/chat?token=${chat.demo.token}`,
    `    signs in as customer ${chat.demo.customer} until ${until} UTC (${DEMO_CHAT_LINK_MS / 3_600_000} hours; a new secret every start;`,
    '    set COUNTERSIGN_CHAT_SECRET for links your app signs)',
  ];
}
