import type { PayloadCodec } from '../store/codec.ts';
import type { DataKeys } from '../store/ports/data-keys.ts';
import type { Store } from '../store/store.ts';
import { withKeyring } from './encrypted-store.ts';
import { encryptingCodec } from './encrypting-codec.ts';
import { ENCRYPTION_KEYS_VAR, envKeyProvider } from './env-key-provider.ts';
import type { KeyProvider } from './key-provider.ts';
import { Keyring } from './keyring.ts';
import { scopeOwnerOf } from './scope-owner.ts';

export interface Encryption {
  readonly keyring: Keyring;
  /** Given to the backend when it is created. */
  readonly codec: PayloadCodec;
  /** Then the backend is wrapped: keys load on first use, and the keyring learns its table. */
  wrap<S extends Store & DataKeys>(store: S): S;
  /**
   * The same for a store of workflow runs only (the file checkpoint store): its payloads are
   * sealed under `run:`, `principal:` and `store` scopes, which name their owner, so no
   * look-up of an owner is needed.
   */
  wrapRuns<S extends DataKeys & object>(store: S): S;
}

/** Encryption at rest with a KeyProvider (a KMS, or the built-in env provider). */
export function createEncryption(provider: KeyProvider): Encryption {
  const keyring = new Keyring(provider);
  return {
    keyring,
    codec: encryptingCodec(keyring),
    wrap(store) {
      const wrapped = withKeyring(store, keyring);
      keyring.attach(store, scopeOwnerOf(wrapped));
      return wrapped;
    },
    wrapRuns(store) {
      const wrapped = withKeyring(store, keyring);
      keyring.attach(store, async (scope) => scope);
      return wrapped;
    },
  };
}

/** From COUNTERSIGN_ENCRYPTION_KEYS, or null when it is unset (payloads stay plain JSON). */
export function encryptionFromEnv(env: Record<string, string | undefined>): Encryption | null {
  const value = env[ENCRYPTION_KEYS_VAR];
  if (value === undefined || value.trim() === '') return null;
  return createEncryption(envKeyProvider(value));
}
