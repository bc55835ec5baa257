/**
 * A data key imported for the cipher. Declared without node's types so the package's public
 * declarations (Keyring's LoadedKey) type-check for a consumer without @types/node; it is a
 * KeyObject underneath.
 */
export interface CipherKey {
  readonly type: 'secret' | 'public' | 'private';
}
