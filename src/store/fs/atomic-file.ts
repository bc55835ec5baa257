import { randomBytes } from 'node:crypto';
import { link, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface AtomicWriter {
  /** Publishes `text` at `path` unless something is there already; false when it was. */
  createExclusive(path: string, text: string): Promise<boolean>;
  /** Publishes `text` at `path`, replacing what was there. */
  replace(path: string, text: string): Promise<void>;
}

/**
 * Readers never see half a file: the text is written (and flushed, when `durable`) to a
 * temporary file in the store's own tmp/ directory, then published in one step. `link`
 * fails if the name exists, which makes the exclusive publish a compare-and-set between
 * processes; `rename` replaces. Both need tmp/ on the same file system as the target,
 * which holds because it is inside the store's directory.
 */
export function createAtomicWriter(tmpDir: string, durable: boolean): AtomicWriter {
  async function writeTemp(text: string): Promise<string> {
    const path = join(tmpDir, `${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
    const handle = await open(path, 'wx');
    try {
      await handle.writeFile(text, 'utf8');
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    return path;
  }

  async function syncDirectoryOf(path: string): Promise<void> {
    if (!durable) return;
    const handle = await open(join(path, '..'), 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  return {
    async createExclusive(path, text) {
      const temp = await writeTemp(text);
      try {
        await link(temp, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      } finally {
        await unlink(temp).catch(() => undefined);
      }
      await syncDirectoryOf(path);
      return true;
    },

    async replace(path, text) {
      const temp = await writeTemp(text);
      try {
        await rename(temp, path);
      } catch (error) {
        await unlink(temp).catch(() => undefined);
        throw error;
      }
      await syncDirectoryOf(path);
    },
  };
}
