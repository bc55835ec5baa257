import type { JsonValue } from '../../core/json.ts';

export type ClaimResult = { won: true; value: JsonValue } | { won: false; value: JsonValue };

/**
 * Application state, namespaced key/value: the one port both tools (e.g. the bookstore's
 * orders) and workflow executors (its refunds) read and change. `Store` and `CheckpointStore`
 * both include it; the SQL backends keep it in one `state` table, so a store that is both
 * implements it once.
 */
export interface AppState {
  getState(namespace: string, key: string): Promise<JsonValue | undefined>;
  setState(namespace: string, key: string, value: JsonValue): Promise<void>;
  /** Stores `value` only if the key is absent; the loser gets what is there. */
  claimState(namespace: string, key: string, value: JsonValue): Promise<ClaimResult>;
}
