import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Loads a dependency the first time it is needed, synchronously (ES modules too, through
 * Node's require of ESM). ajv and the AI SDK's helpers cost about a second to import on a
 * busy machine; every CLI command would pay it while only some agents ever use them.
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(specifier) as T;
    return loaded;
  };
}
