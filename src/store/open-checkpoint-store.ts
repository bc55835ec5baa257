import { resolve } from 'node:path';
import { ConfigError } from '../core/errors/config-error.ts';
import { encryptionFromEnv } from '../crypto/encryption.ts';
import { type CheckpointStore, isCheckpointStore } from './checkpoint-store.ts';
import { openStore } from './open-store.ts';
import type { Store } from './store.ts';

/**
 * Opens where workflow runs live for a COUNTERSIGN_STORE-style spec: `file:DIR` (JSON files,
 * checkpoints only), `memory:`, or a full store that also keeps checkpoints (SQLite, the
 * default, or PostgreSQL: postgres://…). `store` lets a caller that already opened the full store share it, so agents
 * inside workflows and the runs use one connection.
 */
export async function openCheckpointStore(
  spec?: string,
  options: { cwd?: string; store?: () => Promise<Store>; env?: Record<string, string | undefined> } = {},
): Promise<CheckpointStore> {
  const cwd = options.cwd ?? process.cwd();
  const trimmed = spec?.trim() ?? '';
  if (trimmed.startsWith('file:')) {
    const dir = trimmed.slice('file:'.length);
    if (dir === '' || dir.startsWith('//')) {
      throw new ConfigError(
        `COUNTERSIGN_STORE "${trimmed}" needs a directory: file:DIR (relative or absolute).`,
      );
    }
    const { createFileCheckpointStore } = await import('./fs/file-checkpoint-store.ts');
    // COUNTERSIGN_ENCRYPTION_KEYS: payloads are sealed, the data keys live in DIR/keys/.
    const encryption = encryptionFromEnv(options.env ?? process.env);
    if (encryption === null) return createFileCheckpointStore({ dir: resolve(cwd, dir) });
    return encryption.wrapRuns(
      createFileCheckpointStore({ dir: resolve(cwd, dir), codec: encryption.codec }),
    );
  }
  if (trimmed === 'memory:') {
    const { createMemoryCheckpointStore } = await import('./memory/memory-checkpoint-store.ts');
    return createMemoryCheckpointStore();
  }
  const store = options.store ? await options.store() : await openStore(spec, { cwd });
  if (isCheckpointStore(store)) return store;
  if (!options.store) await store.close();
  throw new ConfigError(`The ${store.kind} store does not keep workflow runs yet.`, {
    hint: 'Use COUNTERSIGN_STORE=sqlite:PATH (or unset), postgres://… or file:DIR for workflows.',
  });
}
