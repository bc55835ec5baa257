import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import type { DataKeyRecord, DataKeys } from '../ports/data-keys.ts';
import type { AtomicWriter } from './atomic-file.ts';
import { safeFileName } from './safe-names.ts';

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
const KEY_ID = /^[A-Za-z0-9_-]+$/;
/** `<id>.<revision>.json`: each change of a key (rewrap, forget) is a new file, created once. */
const REVISION = /^([A-Za-z0-9_-]+)\.(\d{6})\.json$/;

function damaged(path: string, detail: string): CorruptDataError {
  return new CorruptDataError(`The file ${path} is damaged: ${detail}.`, {
    hint: 'Restore the keys/ directory from a backup; nothing was changed.',
  });
}

/**
 * The wrapped data keys of a file checkpoint store (src/crypto/), in its keys/ directory:
 *
 *   keys/<id>.<revision>.json   the key's record; a rewrap or forget publishes the next
 *                               revision with an exclusive create (the compare-and-set), and
 *                               the highest revision present is the record
 *   keys/live/<owner>.json      the owner's live key id, created exclusively: of two
 *                               processes creating one owner's key, one wins and both use it
 *
 * Forgetting publishes a revision without the wrapped key and then deletes the earlier
 * revisions, so no file under the directory holds the key any more.
 */
export function createFileDataKeys(dir: string, writer: AtomicWriter, ready: () => Promise<void>): DataKeys {
  const liveDir = join(dir, 'live');
  const revisionPath = (id: string, revision: number) =>
    join(dir, `${id}.${String(revision).padStart(6, '0')}.json`);
  const livePath = (owner: string) => join(liveDir, `${safeFileName(owner)}.json`);

  async function layout(): Promise<void> {
    await ready();
    await mkdir(liveDir, { recursive: true });
  }

  async function names(): Promise<string[]> {
    try {
      return await readdir(dir);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  /** Every key's latest revision number, by id. */
  async function revisions(): Promise<Map<string, number>> {
    const latest = new Map<string, number>();
    for (const name of await names()) {
      const match = REVISION.exec(name);
      if (match === null) continue;
      const [, id, revision] = match as unknown as [string, string, string];
      latest.set(id, Math.max(latest.get(id) ?? -1, Number(revision)));
    }
    return latest;
  }

  async function readRevision(id: string, revision: number): Promise<DataKeyRecord | null> {
    const path = revisionPath(id, revision);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    let record: DataKeyRecord;
    try {
      record = JSON.parse(text) as DataKeyRecord;
    } catch {
      throw damaged(path, 'it is not valid JSON');
    }
    if (record?.id !== id || typeof record.owner !== 'string')
      throw damaged(path, 'it is not a data key record');
    return record;
  }

  /** The key's record at its latest revision, with that revision. */
  async function current(id: string): Promise<{ record: DataKeyRecord; revision: number } | null> {
    if (!KEY_ID.test(id)) return null;
    const revision = (await revisions()).get(id);
    if (revision === undefined) return null;
    const record = await readRevision(id, revision);
    // A newer revision was published and the older ones deleted between the listing and the read.
    return record === null ? current(id) : { record, revision };
  }

  async function liveId(owner: string): Promise<string | null> {
    try {
      const text = await readFile(livePath(owner), 'utf8');
      return (JSON.parse(text) as { id: string }).id;
    } catch (error) {
      if (isMissing(error)) return null;
      throw damaged(livePath(owner), 'it does not name a key');
    }
  }

  async function liveKey(owner: string): Promise<DataKeyRecord | null> {
    const id = await liveId(owner);
    if (id === null) return null;
    const found = await current(id);
    return found === null || found.record.wrapped === null ? null : found.record;
  }

  /** Publishes the key's next revision: false when another process published it first. */
  async function change(id: string, revision: number, record: DataKeyRecord): Promise<boolean> {
    return writer.createExclusive(revisionPath(id, revision + 1), `${JSON.stringify(record)}\n`);
  }

  async function forgetOne(id: string, at: string): Promise<boolean> {
    for (;;) {
      const found = await current(id);
      if (found === null || found.record.wrapped === null) return false;
      const forgotten: DataKeyRecord = { ...found.record, kekId: null, wrapped: null, forgottenAt: at };
      if (!(await change(id, found.revision, forgotten))) continue; // a rewrap won: forget that one
      for (let older = 0; older <= found.revision; older++) {
        await unlink(revisionPath(id, older)).catch((error: unknown) => {
          if (!isMissing(error)) throw error;
        });
      }
      return true;
    }
  }

  return {
    async getDataKey(id) {
      return (await current(id))?.record ?? null;
    },

    liveDataKey: liveKey,

    async insertDataKey(key) {
      await layout();
      for (;;) {
        const existing = await liveKey(key.owner);
        if (existing !== null) return existing;
        // A claim naming a forgotten key (a forget stopped before removing it) is stale; a claim
        // naming a live key was published since liveKey read: the loop returns that key.
        const claimed = await liveId(key.owner);
        if (claimed !== null) {
          if ((await current(claimed))?.record.wrapped === null)
            await unlink(livePath(key.owner)).catch(() => undefined);
          continue;
        }
        if (!(await writer.createExclusive(revisionPath(key.id, 0), `${JSON.stringify(key)}\n`))) {
          throw damaged(revisionPath(key.id, 0), 'a data key with this id exists already');
        }
        if (await writer.createExclusive(livePath(key.owner), `${JSON.stringify({ id: key.id })}\n`)) {
          return structuredClone(key);
        }
        // Another process won this owner: ours was never used, so it goes.
        await unlink(revisionPath(key.id, 0)).catch(() => undefined);
      }
    },

    async rewrapDataKey(id, fromKekId, kekId, wrapped) {
      const found = await current(id);
      if (found === null || found.record.wrapped === null || found.record.kekId !== fromKekId) return false;
      if (!(await change(id, found.revision, { ...found.record, kekId, wrapped }))) return false;
      await unlink(revisionPath(id, found.revision)).catch(() => undefined);
      return true;
    },

    async forgetDataKeys(owner, at) {
      const forgotten: string[] = [];
      // Every live key of the owner, not only the claimed one: one left by a crashed insert too.
      for (const id of [...(await revisions()).keys()].sort()) {
        const found = await current(id);
        if (found?.record.owner === owner && (await forgetOne(id, at))) forgotten.push(id);
      }
      await unlink(livePath(owner)).catch((error: unknown) => {
        if (!isMissing(error)) throw error;
      });
      return forgotten;
    },

    async listLiveDataKeys({ afterId, limit }) {
      const page: DataKeyRecord[] = [];
      for (const id of [...(await revisions()).keys()].sort()) {
        if (afterId !== undefined && id <= afterId) continue;
        const found = await current(id);
        if (found === null || found.record.wrapped === null) continue;
        page.push(found.record);
        if (page.length >= limit) break;
      }
      return page;
    },
  };
}
