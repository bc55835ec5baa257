import { createHmac, hkdfSync } from 'node:crypto';
import { ConfigError } from '../../core/errors/config-error.ts';
import {
  type CustomerToken,
  checkCustomerToken,
  signCustomerToken,
  type TokenCheck,
} from './customer-token.ts';

/** Only the chat's paths get it: the inbox never sees a customer's cookie. */
export const CHAT_COOKIE = 'countersign_chat';
export const CHAT_COOKIE_PATH = '/chat';

/** A chat sign-in lasts until the token's `exp`, and never longer than this after the exchange. */
export const CHAT_SIGN_IN_MAX_MS = 12 * 60 * 60 * 1000;

/** HS256 keys shorter than the hash (256 bits) are guessable offline from one token. */
const MIN_SECRET_LENGTH = 32;

export interface ChatSignIn extends CustomerToken {
  /** Sent back with every message; a page on another site cannot read it. */
  csrf: string;
}

export interface ChatSignIns {
  /** A customer token from the host application, checked; on success, the cookie to set. */
  exchange(
    token: string,
  ): Promise<(TokenCheck & { ok: false }) | { ok: true; cookie: string; signIn: ChatSignIn }>;
  /** The sign-in a cookie value holds, or null when it is missing, forged or over. */
  read(cookie: string | undefined): Promise<ChatSignIn | null>;
}

/**
 * Customer sign-ins are kept in the cookie itself, signed: every instance sharing the secret
 * honours it, and the store holds nothing. The cookie is a JWT of our own, signed with a key
 * derived from the secret, so a host application's token is not a cookie and a cookie is not
 * a token. It carries the token's `exp`, so it stops working when the token would.
 */
export function createChatSignIns(secret: string, now: () => number): ChatSignIns {
  if (secret.length < MIN_SECRET_LENGTH)
    throw new ConfigError(
      `The chat secret (COUNTERSIGN_CHAT_SECRET) is ${secret.length} characters long; it needs at least ${MIN_SECRET_LENGTH}.`,
      { hint: 'Generate one with `openssl rand -base64 32` and give the same value to your application.' },
    );
  const tokenKey = new TextEncoder().encode(secret);
  const derive = (label: string) =>
    new Uint8Array(hkdfSync('sha256', tokenKey, new Uint8Array(0), `countersign chat ${label}`, 32));
  const cookieKey = derive('cookie');
  const csrfKey = derive('csrf');
  const csrfOf = (cookie: string) => createHmac('sha256', csrfKey).update(cookie).digest('base64url');

  return {
    async exchange(token) {
      const at = now();
      const checked = await checkCustomerToken(token, tokenKey, at);
      if (!checked.ok) return checked;
      const signIn = {
        customer: checked.customer,
        // Whole seconds, as the cookie's own `exp` holds it.
        expiresAtMs: Math.floor(Math.min(checked.expiresAtMs, at + CHAT_SIGN_IN_MAX_MS) / 1000) * 1000,
      };
      const cookie = await signCustomerToken(cookieKey, signIn);
      return { ok: true, cookie, signIn: { ...signIn, csrf: csrfOf(cookie) } };
    },
    async read(cookie) {
      if (!cookie) return null;
      const checked = await checkCustomerToken(cookie, cookieKey, now());
      if (!checked.ok) return null;
      return { customer: checked.customer, expiresAtMs: checked.expiresAtMs, csrf: csrfOf(cookie) };
    },
  };
}
