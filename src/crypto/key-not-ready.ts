/**
 * What the encrypting codec needs before it can go on: a data key it has not loaded yet
 * (unwrapping is async, encode/decode are not). Never reaches a caller: the encrypted store
 * (encrypted-store.ts) loads the key and runs the call again. It is thrown before anything is
 * written (encode runs before the statement; in a transaction it rolls back), so running the
 * call again writes once.
 */
export class KeyNotReady extends Error {
  override readonly name = 'KeyNotReady';
  readonly need: KeyNeed;
  constructor(need: KeyNeed) {
    super('scope' in need ? `data key of ${need.scope} not loaded` : `data key ${need.dataKey} not loaded`);
    this.need = need;
  }
}

export type KeyNeed = { scope: string } | { dataKey: string };
