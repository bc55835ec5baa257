import { mkdir, readdir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { AtomicWriter } from './atomic-file.ts';
import { safeFileName } from './safe-names.ts';

/**
 * The file store's index of runs, what erasure and retention look runs up by instead of
 * reading every run (run-index/ in the store's directory):
 *
 *   customer/<customer>/<run>    a run started for that customer
 *   ended/<updated at>~<run>     a run whose checkpoint of that time ended it
 *   built                        every run written before the index existed is in it
 *
 * Markers are empty files, written before the checkpoint they describe is published, so a
 * crash in between leaves a marker too many, never one too few. Readers therefore check a
 * marker against the run itself (its first checkpoint's customer, its latest checkpoint)
 * and drop the stale ones. A run id never holds `~` (userIdPattern), and a name made by
 * safeFileName never does, so `~` splits an ended marker.
 */
export interface FileRunIndex {
  /** Before a run's first checkpoint is published. */
  noteCustomer(customer: string, run: string): Promise<void>;
  /** Before a checkpoint that ends a run is published. */
  noteEnded(updatedAt: string, run: string): Promise<void>;
  /** The runs marked as started for `customer` (unchecked). */
  customerRuns(customer: string): Promise<string[]>;
  /** Ended markers in order of time, then run (unchecked). `at` is null when the name does not say it. */
  endedMarkers(): Promise<Array<{ name: string; at: string | null; run: string }>>;
  dropCustomer(customer: string, run: string): Promise<void>;
  dropEnded(name: string): Promise<void>;
  /** Runs `build` once for a store written before the index (any process may; it is idempotent). */
  ensureBuilt(build: () => Promise<void>): Promise<void>;
}

/** The name of the ended marker of the checkpoint written at `updatedAt`. */
export function endedMarkerName(updatedAt: string, run: string): string {
  return `${plainInstant.test(updatedAt) ? updatedAt : safeFileName(updatedAt)}~${run}`;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
/** Instants as countersign writes them are file-name safe as they are, and sort as they compare. */
const plainInstant = /^[0-9A-Za-z:.+-]{1,64}$/;

async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

async function remove(path: string): Promise<void> {
  await unlink(path).catch((error: unknown) => {
    if (!isMissing(error)) throw error;
  });
}

export function createFileRunIndex(dir: string, writer: AtomicWriter): FileRunIndex {
  const customers = join(dir, 'customer');
  const ended = join(dir, 'ended');
  let built: Promise<void> | undefined;

  const mark = async (folder: string, name: string) => {
    // A customer's folder goes with their last run (dropCustomer): made again if it just went.
    for (let attempt = 0; ; attempt++) {
      await mkdir(folder, { recursive: true });
      try {
        await writer.createExclusive(join(folder, name), '');
        return;
      } catch (error) {
        if (!isMissing(error) || attempt >= 3) throw error;
      }
    }
  };

  return {
    async noteCustomer(customer, run) {
      await mark(join(customers, safeFileName(customer)), run);
    },

    async noteEnded(updatedAt, run) {
      await mark(ended, endedMarkerName(updatedAt, run));
    },

    async customerRuns(customer) {
      return names(join(customers, safeFileName(customer)));
    },

    async endedMarkers() {
      return (await names(ended)).sort().flatMap((name) => {
        const split = name.indexOf('~');
        if (split < 1) return [];
        const time = name.slice(0, split);
        return [{ name, at: plainInstant.test(time) ? time : null, run: name.slice(split + 1) }];
      });
    },

    async dropCustomer(customer, run) {
      const folder = join(customers, safeFileName(customer));
      await remove(join(folder, run));
      // Their last run gone, their id goes from the index too (an erased customer leaves no name).
      await rmdir(folder).catch((error: unknown) => {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
      });
    },

    async dropEnded(name) {
      await remove(join(ended, name));
    },

    ensureBuilt(build) {
      built ??= (async () => {
        if ((await names(dir)).includes('built')) return;
        await build();
        await mark(dir, 'built');
      })().catch((error: unknown) => {
        built = undefined;
        throw error;
      });
      return built;
    },
  };
}
