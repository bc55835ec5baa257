/**
 * An inbox sign-in as stored. The cookie value itself is never stored, only its SHA-256, so
 * a copy of the database hands out no live cookies. Neither are the approver's roles: the
 * server looks the name up in its current approver configuration on every request.
 */
export interface WebSessionRecord {
  /** SHA-256 of the cookie value, lowercase hex (64 characters). */
  idHash: string;
  /** The approver's name, as configured when they signed in. */
  approver: string;
  createdAt: string;
  /** Epoch ms at which the sign-in ends unless a request slides it forward. */
  expiresAtMs: number;
}

/**
 * Inbox sign-ins (web sessions), shared by every server instance on the store. A server port,
 * not part of `Store`. The built-in stores implement it (SQLite and PostgreSQL: the
 * `web_sessions` table); `createMemoryWebSessionStore` is the process-local one.
 */
export interface WebSessionStore {
  /**
   * Stores a new sign-in. In the same write, deletes every sign-in that expired at `nowMs`
   * (`expiresAtMs <= nowMs`), so expired rows never pile up (SQL backends use an index on
   * the expiry). An existing row with the same `idHash` is replaced (it cannot happen with
   * random cookie values; it makes a retried write harmless).
   */
  createWebSession(session: WebSessionRecord, nowMs: number): Promise<void>;
  /** The sign-in with this hash if it is still live at `nowMs` (`expiresAtMs > nowMs`), else null. A read only. */
  getWebSession(idHash: string, nowMs: number): Promise<WebSessionRecord | null>;
  /**
   * Sliding expiry: if the sign-in is live at `nowMs`, moves its expiry to `expiresAtMs`
   * (never backwards) and returns it as stored now; an expired or unknown one is null and
   * is left for the pruning in `createWebSession`.
   */
  touchWebSession(
    idHash: string,
    update: { nowMs: number; expiresAtMs: number },
  ): Promise<WebSessionRecord | null>;
  /** Signs out: deletes the sign-in (for every instance on the store); whether a row was there. */
  deleteWebSession(idHash: string): Promise<boolean>;
}

export function isWebSessionStore(value: unknown): value is WebSessionStore {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getWebSession?: unknown }).getWebSession === 'function' &&
    typeof (value as { touchWebSession?: unknown }).touchWebSession === 'function'
  );
}
