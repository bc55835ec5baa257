import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';

/**
 * The seam every stored payload (messages, arguments, results, batches, checkpoint state)
 * passes through. Backends store the encoded text as it is; encryption at rest or
 * compression is a different codec, not a change to any backend.
 */
export interface PayloadCodec {
  readonly name: string;
  encode(value: unknown): string;
  /** `where` names the row for the error message when the text cannot be decoded. */
  decode(text: string, where: string): unknown;
}

export const jsonCodec: PayloadCodec = {
  name: 'json',
  encode: (value) => JSON.stringify(value),
  decode: (text, where) => {
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new CorruptDataError(`Stored data at ${where} is not valid JSON.`, {
        hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
        cause,
      });
    }
  },
};
