/**
 * One wrapped data key (src/crypto/): the key that encrypts one owner's payloads, stored only
 * wrapped by a key-encryption key. `owner` is `principal:<id>`, `session:<id>` (a session
 * without a principal), `run:<id>` (a workflow run) or `store` (data of no one customer: app
 * state, webhook bodies, decisions). A forgotten key keeps its row, without the key, so a
 * value naming it decodes as erased rather than as damage.
 */
export interface DataKeyRecord {
  id: string;
  owner: string;
  /** The KEK that wrapped it; null once forgotten. */
  kekId: string | null;
  wrapped: string | null;
  createdAt: string;
  forgottenAt: string | null;
}

/**
 * The wrapped data keys of a store: not part of `Store` (only an encrypting codec needs it),
 * implemented by the memory, SQLite and PostgreSQL stores and the file checkpoint store
 * (src/store/fs/file-data-keys.ts; their conformance: data-key-cases.ts).
 */
export interface DataKeys {
  getDataKey(id: string): Promise<DataKeyRecord | null>;
  /** The owner's live (not forgotten) key, if it has one. */
  liveDataKey(owner: string): Promise<DataKeyRecord | null>;
  /**
   * Inserts `key` unless the owner already has a live key; returns the live key either way,
   * so of two processes creating one owner's key at once both end up using the same one.
   */
  insertDataKey(key: DataKeyRecord): Promise<DataKeyRecord>;
  /** Compare-and-set on the KEK: replaces the wrapping only while `fromKekId` still wraps it. */
  rewrapDataKey(id: string, fromKekId: string, kekId: string, wrapped: string): Promise<boolean>;
  /** Destroys the owner's live keys (the wrapped bytes are removed); returns the ids forgotten. */
  forgetDataKeys(owner: string, at: string): Promise<string[]>;
  /** Live keys in id order, after `afterId`, at most `limit`: the rotation's pages. */
  listLiveDataKeys(query: { afterId?: string; limit: number }): Promise<DataKeyRecord[]>;
}

export function isDataKeys(value: unknown): value is DataKeys {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { insertDataKey?: unknown }).insertDataKey === 'function' &&
    typeof (value as { forgetDataKeys?: unknown }).forgetDataKeys === 'function'
  );
}
