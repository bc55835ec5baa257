/**
 * Where key-encryption keys (KEKs) live. A KEK never encrypts a payload: it wraps the data keys
 * that do (envelope encryption), so a KEK can sit in a KMS that is asked once per data key,
 * and rotating it re-wraps data keys without touching a payload. Async for that reason.
 */
export interface KeyProvider {
  /** For messages and `keys rotate` output, e.g. "env". */
  readonly name: string;
  /** The KEK new data keys are wrapped under (the newest one). */
  currentKeyId(): string;
  /** Every KEK id this provider can unwrap with. */
  keyIds(): readonly string[];
  /**
   * Wraps a data key under the current KEK. `dataKeyId` is bound into the wrapping (as
   * additional authenticated data), so a wrapped key copied onto another id does not unwrap.
   */
  wrap(dataKeyId: string, dataKey: Uint8Array): Promise<WrappedKey>;
  /** Throws CONFIG_ERROR naming `kekId` when that KEK is unknown or is not the one that wrapped it. */
  unwrap(dataKeyId: string, wrapped: WrappedKey): Promise<Uint8Array>;
}

export interface WrappedKey {
  /** The KEK that wrapped it. */
  readonly kekId: string;
  /** Provider-defined text (the built-in one: base64 of iv ‖ tag ‖ ciphertext). */
  readonly wrapped: string;
}
