import { errors, jwtVerify, SignJWT } from 'jose';
import { userIdPattern } from '../../core/ids.ts';

/**
 * Clocks of the host application and of countersign may differ a little: a token whose `nbf`
 * or `iat` is up to this far in our future is still accepted. `exp` is honoured exactly, so a
 * sign-in never outlasts what the host application granted.
 */
export const CUSTOMER_TOKEN_SKEW_SECONDS = 30;

export interface CustomerToken {
  customer: string;
  expiresAtMs: number;
}

export type TokenCheck = ({ ok: true } & CustomerToken) | { ok: false; problem: string };

/**
 * Checks a customer token: a JWT signed with HS256 (no other algorithm, never `none`),
 * with `exp` and a `sub` that is a valid customer id. The problem is a sentence for the
 * customer; which check failed is not theirs to debug, only whether the link is still good.
 */
export async function checkCustomerToken(token: string, key: Uint8Array, nowMs: number): Promise<TokenCheck> {
  const invalid = { ok: false, problem: 'This sign-in link is not valid.' } as const;
  const expired = { ok: false, problem: 'This sign-in link has expired.' } as const;
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'sub'],
      clockTolerance: CUSTOMER_TOKEN_SKEW_SECONDS,
      currentDate: new Date(nowMs),
    });
    const { sub, exp, iat } = payload;
    if (typeof sub !== 'string' || !userIdPattern.test(sub) || exp === undefined) return invalid;
    // jose checks `iat` only against a maximum age; one from the future is a forged or broken clock.
    if (iat !== undefined && iat * 1000 > nowMs + CUSTOMER_TOKEN_SKEW_SECONDS * 1000) return invalid;
    if (exp * 1000 <= nowMs) return expired;
    return { ok: true, customer: sub, expiresAtMs: exp * 1000 };
  } catch (error) {
    if (error instanceof errors.JWTExpired) return expired;
    if (error instanceof errors.JOSEError) return invalid;
    throw error;
  }
}

/** Signs a customer token as a host application would (the demo link and the cookie use it). */
export function signCustomerToken(key: Uint8Array, token: CustomerToken): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(token.customer)
    .setExpirationTime(Math.floor(token.expiresAtMs / 1000))
    .sign(key);
}
