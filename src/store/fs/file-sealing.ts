import { decodeText, encodeText, jsonCodec, type PayloadCodec } from '../codec.ts';

// The data key named by a sealed value (`cs1:<id>:…`, `cs1t:<id>:…`) inside a file's JSON text.
const SEALED_IN_TEXT = /"(cs1t?:[A-Za-z0-9_-]+:)/g;

/**
 * How the file checkpoint store writes payloads: with the JSON codec (no encryption keys) a
 * file holds them as plain JSON, as files always did; with an encrypting codec each payload is
 * a sealed text in a field of its own (`bodySealed`, `argsSealed`, …), beside the ids,
 * statuses, times and hashes, which stay clear.
 */
export interface FileSealing {
  /** True when payloads are sealed (an encrypting codec). */
  readonly sealed: boolean;
  seal(value: unknown, scope: string): string;
  open(text: string, where: string): unknown;
  sealText(text: string, scope: string): string;
  openText(stored: string, where: string): string;
  /** Loads the data keys a file's text names, so opening it cannot stop half-way. */
  prepare(text: string): Promise<void>;
}

export function fileSealing(codec: PayloadCodec | undefined): FileSealing {
  const used = codec ?? jsonCodec;
  return {
    sealed: codec !== undefined && codec !== jsonCodec,
    seal: (value, scope) => used.encode(value, scope),
    open: (text, where) => used.decode(text, where),
    sealText: (text, scope) => encodeText(used, text, scope),
    openText: (stored, where) => decodeText(used, stored, where),
    async prepare(text) {
      if (used.prepare === undefined) return;
      const found = [...text.matchAll(SEALED_IN_TEXT)].map((match) => match[1] as string);
      if (found.length > 0) await used.prepare([...new Set(found)]);
    },
  };
}
