import { randomBytes } from 'node:crypto';
import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import { storedText } from '../core/storable-text.ts';
import type { DataKeyRecord, DataKeys } from '../store/ports/data-keys.ts';
import { cipherKey } from './aes-gcm.ts';
import type { CipherKey } from './cipher-key.ts';
import { type KeyNeed, KeyNotReady } from './key-not-ready.ts';
import type { KeyProvider } from './key-provider.ts';
import { isOwnerScope, KEY_SCOPE, principalScope, runScope, STORE_SCOPE, sessionScope } from './scopes.ts';

/**
 * The owner of a scope that does not name one (`session:`, `request:`, `execution:`; see
 * scopes.ts), found in the store: a session's principal, a request's customer. Scopes never
 * change owner, so each is asked once per process.
 */
export type ScopeOwner = (scope: string) => Promise<string>;

export interface LoadedKey {
  readonly id: string;
  readonly key: CipherKey;
  /** The id as bytes, bound into every value sealed with it. */
  readonly aad: Uint8Array;
}

const ROTATE_PAGE = 200;

/** What one rotation did: key ids only, never key material. */
export interface KeyRotation {
  /** Data keys re-wrapped by this run (an interrupted earlier run's are not counted again). */
  rewrapped: number;
  /** Live data keys seen. */
  total: number;
  /** The key-encryption key they are wrapped under now (the first of the provider's keys). */
  kekId: string;
  /** The key-encryption keys they were re-wrapped from, sorted. */
  from: string[];
}
export const REVALIDATE_MS = 30_000;
// About 8 million characters of sealed and opened text (some 16-24 MB): the recent data of a
// server's active sessions. Texts over 16 KB are not kept.
const OPENED_BUDGET = 8_000_000;
const OPENED_MAX_TEXT = 16_384;

/**
 * A bounded cache in two generations: new texts go into the young map; when it holds half
 * the budget it becomes the old one and the previous old one is dropped whole. A hit in the
 * old map moves the text back to the young one. Each set is one Map write, with no per-entry
 * eviction: this runs once per sealed value, on the hot path of every step.
 */
class OpenedTexts {
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  private size = 0;

  get(sealed: string): string | undefined {
    const hit = this.young.get(sealed);
    if (hit !== undefined) return hit;
    const aged = this.old.get(sealed);
    if (aged !== undefined) this.set(sealed, aged);
    return aged;
  }

  set(sealed: string, json: string): void {
    if (sealed.length > OPENED_MAX_TEXT) return;
    if (this.size >= OPENED_BUDGET / 2) {
      this.old = this.young;
      this.young = new Map();
      this.size = 0;
    }
    this.young.set(sealed, json);
    this.size += sealed.length + json.length;
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.size = 0;
  }
}

/**
 * The data keys of one store, unwrapped once and kept: encode and decode look keys up
 * synchronously (a Map read), and what is not loaded yet is loaded by `ready`, the only
 * place that awaits the KeyProvider or the store's `data_keys`.
 */
export class Keyring {
  private keys = new Map<string, LoadedKey | null>(); // data key id → key; null: forgotten
  // owner → its live data key id. Keyed by the owner as the data_keys table holds it
  // (storedText): an owner naming a session id with a lone surrogate comes back with U+FFFD.
  private live = new Map<string, string>();
  private owners = new Map<string, string>(); // session scope → owner
  private loading = new Map<string, Promise<void>>();
  private checkedAt = new Map<string, number>(); // data key id → when its row was last read
  /** The clock revalidation reads (a test moves it). */
  now: () => number = Date.now;
  private dataKeys: DataKeys | null = null;
  private scopeOwner: ScopeOwner = async (scope) => scope;
  /**
   * Sealed texts this process wrote or opened, with their JSON: a row read back right after
   * it was written (RETURNING, the history of a running session) is not decrypted again.
   * Emptied when a key is forgotten, so nothing erased is served from here.
   */
  readonly openedTexts = new OpenedTexts();
  readonly provider: KeyProvider;

  constructor(provider: KeyProvider) {
    this.provider = provider;
  }

  /** Binds the store the keys live in (the codec exists before the store it is given to). */
  attach(dataKeys: DataKeys, scopeOwner: ScopeOwner): void {
    this.dataKeys = dataKeys;
    this.scopeOwner = scopeOwner;
  }

  /** The key new values of `scope` are sealed with; throws KeyNotReady when not loaded. */
  sealingKey(scope: string): LoadedKey {
    if (scope.startsWith(KEY_SCOPE)) {
      // Sealed like a value already stored (its data key); a forgotten one seals nothing new.
      const id = scope.slice(KEY_SCOPE.length);
      const named = this.keys.get(id);
      if (named === undefined) throw new KeyNotReady({ dataKey: id });
      this.recheckIfStale(id);
      return named ?? this.sealingKey(STORE_SCOPE);
    }
    const owner = isOwnerScope(scope) ? scope : this.owners.get(scope);
    const id = owner === undefined ? undefined : this.live.get(storedText(owner));
    const key = id === undefined ? undefined : this.keys.get(id);
    if (key === undefined || key === null) throw new KeyNotReady({ scope });
    this.recheckIfStale(key.id);
    return key;
  }

  /** The key a stored value names; null once forgotten; throws KeyNotReady when not loaded. */
  openingKey(id: string): LoadedKey | null {
    const key = this.keys.get(id);
    if (key === undefined) throw new KeyNotReady({ dataKey: id });
    if (key !== null) this.recheckIfStale(id);
    return key;
  }

  /**
   * A live key is checked against its row again once REVALIDATE_MS have passed since the
   * last check: a key another process forgot (erase) stops being used here soon after,
   * without a read per value. The check runs beside the call that noticed (which still
   * uses the key), so no call waits for it or runs twice because of it.
   */
  private recheckIfStale(id: string): void {
    const checked = this.checkedAt.get(id);
    if (checked === undefined || this.now() - checked <= REVALIDATE_MS) return;
    this.checkedAt.set(id, this.now());
    const tag = `r ${id}`;
    if (this.loading.has(tag)) return;
    const check = (async () => {
      const record = await this.store().getDataKey(id);
      if (record !== null && record.wrapped === null) await this.load(record);
    })()
      // A failed check (the store closed, a dropped connection) is tried again in 5 s.
      .catch(() => {
        this.checkedAt.set(id, this.now() - REVALIDATE_MS + 5_000);
      })
      .finally(() => this.loading.delete(tag));
    this.loading.set(tag, check);
  }

  /** Resolves once every load and check under way has ended (tests, and a clean close). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.loading.values()]);
  }

  /** A session read or created: its owner is known without asking the store again. */
  noteSession(id: string, principal: string | null): void {
    const scope = sessionScope(id);
    if (!this.owners.has(scope)) this.owners.set(scope, principal ? principalScope(principal) : scope);
  }

  /** Whether the data key `id` is loaded (or known to be forgotten). */
  has(id: string): boolean {
    return this.keys.has(id);
  }

  /** Loads (or creates) what `need` names. Concurrent calls for one need share one load. */
  ready(need: KeyNeed): Promise<void> {
    const tag = 'scope' in need ? `s ${need.scope}` : `k ${need.dataKey}`;
    let pending = this.loading.get(tag);
    if (pending === undefined) {
      pending = ('scope' in need ? this.readyScope(need.scope) : this.readyKey(need.dataKey)).finally(() =>
        this.loading.delete(tag),
      );
      this.loading.set(tag, pending);
    }
    return pending;
  }

  /**
   * Destroys the principal's data key (`countersign erase`): every value sealed with it, in
   * every row and backup that holds only the wrapped key, decodes as erased from now on.
   * True when there was one. Another process that holds the key unwrapped stops using it
   * within REVALIDATE_MS (it reads the key's row again then).
   */
  async forget(principal: string): Promise<boolean> {
    return this.forgetOwner(principalScope(principal));
  }

  /**
   * Destroys a workflow run's own data key: its checkpoint bodies (the run's state) are sealed
   * with it, not with the customer's, so erasing a customer destroys the keys of their runs too.
   */
  async forgetRun(run: string): Promise<boolean> {
    return this.forgetOwner(runScope(run));
  }

  /**
   * Whether the principal still has a live data key, i.e. whether `forget` would destroy one.
   * Erasure asks before it removes rows, because its audit entry commits with the rows and
   * the key goes only after them (src/erasure/erase-principal.ts).
   */
  async holds(principal: string): Promise<boolean> {
    return (await this.store().liveDataKey(principalScope(principal))) !== null;
  }

  private async forgetOwner(owner: string): Promise<boolean> {
    const ids = await this.store().forgetDataKeys(owner, new Date().toISOString());
    for (const id of ids) this.keys.set(id, null);
    if (ids.length > 0) this.openedTexts.clear();
    this.live.delete(storedText(owner));
    return ids.length > 0;
  }

  /**
   * Re-wraps every live data key not wrapped by the provider's current KEK; payloads are not
   * touched (they name the data key, which does not change). Each key is its own
   * compare-and-set, so an interrupted rotation is finished by running it again.
   */
  async rotate(): Promise<KeyRotation> {
    const kekId = this.provider.currentKeyId();
    let rewrapped = 0;
    let total = 0;
    const from = new Set<string>();
    let afterId: string | undefined;
    for (;;) {
      const page = await this.store().listLiveDataKeys({ afterId, limit: ROTATE_PAGE });
      for (const record of page) {
        total += 1;
        if (record.kekId === kekId || record.kekId === null || record.wrapped === null) continue;
        const key = await this.provider.unwrap(record.id, { kekId: record.kekId, wrapped: record.wrapped });
        const next = await this.provider.wrap(record.id, key);
        if (await this.store().rewrapDataKey(record.id, record.kekId, next.kekId, next.wrapped)) {
          rewrapped += 1;
          from.add(record.kekId);
        }
      }
      if (page.length < ROTATE_PAGE) break;
      afterId = page[page.length - 1]?.id;
    }
    return { rewrapped, total, kekId, from: [...from].sort() };
  }

  private store(): DataKeys {
    if (this.dataKeys === null)
      throw new Error('Keyring used before attach(): open the store through openStore.');
    return this.dataKeys;
  }

  private async ownerOf(scope: string): Promise<string> {
    if (isOwnerScope(scope)) return scope;
    const known = this.owners.get(scope);
    if (known !== undefined) return known;
    const owner = await this.scopeOwner(scope);
    this.owners.set(scope, owner);
    return owner;
  }

  private async readyScope(scope: string): Promise<void> {
    const owner = await this.ownerOf(scope);
    const known = this.live.get(storedText(owner));
    if (known !== undefined && this.keys.get(known)) return;
    const record = (await this.store().liveDataKey(owner)) ?? (await this.create(owner));
    await this.load(record);
  }

  private async readyKey(id: string): Promise<void> {
    if (this.has(id)) return;
    const record = await this.store().getDataKey(id);
    if (record === null) {
      throw new CorruptDataError(`A stored value names data key ${id}, which this store does not hold.`, {
        hint: 'The value was copied from another store or the data_keys table lost rows; restore it from a backup. Nothing was changed.',
      });
    }
    await this.load(record);
  }

  private async create(owner: string): Promise<DataKeyRecord> {
    const id = `dk_${randomBytes(12).toString('hex')}`;
    const key = randomBytes(32);
    const wrapped = await this.provider.wrap(id, key);
    const record: DataKeyRecord = {
      id,
      owner,
      kekId: wrapped.kekId,
      wrapped: wrapped.wrapped,
      createdAt: new Date().toISOString(),
      forgottenAt: null,
    };
    const winner = await this.store().insertDataKey(record);
    if (winner.id === id) {
      this.keys.set(id, { id, key: cipherKey(key), aad: Buffer.from(id) });
      this.checkedAt.set(id, this.now());
    }
    return winner;
  }

  private async load(record: DataKeyRecord): Promise<void> {
    if (record.wrapped === null || record.kekId === null) {
      const wasLive = Boolean(this.keys.get(record.id));
      this.keys.set(record.id, null);
      this.checkedAt.delete(record.id);
      if (this.live.get(storedText(record.owner)) === record.id) this.live.delete(storedText(record.owner));
      // Forgotten by another process: what this one had opened with it goes too.
      if (wasLive) this.openedTexts.clear();
      return;
    }
    this.checkedAt.set(record.id, this.now());
    if (!this.keys.get(record.id)) {
      const key = Buffer.from(
        await this.provider.unwrap(record.id, { kekId: record.kekId, wrapped: record.wrapped }),
      );
      this.keys.set(record.id, { id: record.id, key: cipherKey(key), aad: Buffer.from(record.id) });
    }
    this.live.set(storedText(record.owner), record.id);
  }
}

export { STORE_SCOPE };
