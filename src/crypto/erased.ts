/**
 * What a stored value decodes to once its data key was destroyed (`countersign erase`): not
 * CORRUPT_DATA, because nothing is damaged; the value is gone on purpose. Views and
 * `audit --verify` show it as "erased".
 */
export const ERASED_MARKER: { readonly $erased: true } = Object.freeze({ $erased: true });

export type ErasedValue = typeof ERASED_MARKER;

export function isErased(value: unknown): value is ErasedValue {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>).$erased === true;
}

/** What an erased text column (an effect preview) reads as. */
export const ERASED_TEXT = '[erased]';
