import { appendFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import type { JsonValue } from '../../core/json.ts';
import {
  assertCheckpointHeader,
  assertRaisedRequests,
  assertStoreId,
  checkpointCustomer,
  sortRuns,
  toCheckpointSummary,
  toRunSummary,
} from '../checkpoint-rules.ts';
import type {
  CheckpointStore,
  RunSummary,
  SaveCheckpointResult,
  StoredCheckpoint,
} from '../checkpoint-store.ts';
import type { PayloadCodec } from '../codec.ts';
import { type LegacyAnswer, withLegacyAnswer as legacyRequestRowsWithAnswer } from '../legacy-requests.ts';
import type { DataKeys } from '../ports/data-keys.ts';
import { createRunErasure, ENDED_RUN_STATUSES, type HeldRuns } from '../run-erasure.ts';
import { pageRunsInMemory, planRunPage } from '../run-page.ts';
import { stateValue } from '../state-value.ts';
import { createAtomicWriter } from './atomic-file.ts';
import { createFileDataKeys } from './file-data-keys.ts';
import {
  checkpointFileId,
  checkpointFileText,
  type IndexLine,
  parseAnswerFile,
  parseCheckpointFile,
  parseIndex,
  parseStateFile,
  stateFileText,
} from './file-records.ts';
import { createFileRequestBook } from './file-request-book.ts';
import { createFileRunIndex, endedMarkerName } from './file-run-index.ts';
import { fileSealing } from './file-sealing.ts';
import { checkpointFileName, checkpointFilePattern, safeFileName } from './safe-names.ts';

export interface FileCheckpointStoreOptions {
  dir: string;
  /** fsync every file and its directory before a write counts as done (default true). */
  durable?: boolean;
  /**
   * What payloads pass through: checkpoint bodies, port requests' payloads and previews,
   * decisions and app state (the encrypting codec of src/crypto/ seals them). Default: plain
   * JSON, as files were always written.
   */
  codec?: PayloadCodec;
}

export interface FileCheckpointStore extends CheckpointStore, DataKeys {
  readonly kind: 'file';
  /** Files hold no audit trail: `options.audit` of a write is ignored (the runner appends it elsewhere, if given a trail). */
  readonly keepsAudit: false;
  /** Absolute path of the store's directory. */
  readonly dir: string;
  /** Absolute path of a checkpoint's file (for tools and tests that look inside). */
  checkpointPath(run: string, seq: number): string;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Workflow checkpoints as JSON files in one directory, shared safely by several processes
 * on one machine:
 *
 *   index.jsonl                       one {run, checkpoint, file, parent} line per checkpoint
 *   runs/<run>/00000000.json          checkpoint files, named by their position in the run
 *   requests/<request>.json           a port request as raised (see file-request-book.ts)
 *   requests/<request>.decision.json  its answer or expiry (created once: the compare-and-set)
 *   runs/<run>/answers/<request>.json answers written before requests were rows (read when
 *                                     the runner adopts the request, see adoptRequests)
 *   state/<namespace>/<key>.json      executors' application state
 *   keys/                             wrapped data keys, with encryption on (file-data-keys.ts)
 *   tmp/                              files being written
 *
 * The checkpoint files are the truth; the index is the catalogue that maps a checkpoint id
 * to its file. A checkpoint is committed by publishing its file under the next position
 * with `link`, which fails when another writer took that position first — the
 * compare-and-set of `saveCheckpoint`. A crash between that and the index append leaves a
 * checkpoint the index lacks; lookups then fall back to the run's directory.
 *
 * index.jsonl is appended with one write of one line under O_APPEND. On Linux local file
 * systems such a write is not interleaved with another process's and lands at the end, so
 * concurrent appends give whole lines; network file systems do not promise that.
 */
export function createFileCheckpointStore(options: FileCheckpointStoreOptions): FileCheckpointStore {
  const dir = resolve(options.dir);
  const durable = options.durable ?? true;
  const tmpDir = join(dir, 'tmp');
  const indexPath = join(dir, 'index.jsonl');
  const writer = createAtomicWriter(tmpDir, durable);
  const requestsDir = join(dir, 'requests');
  const sealing = fileSealing(options.codec);
  let ready: Promise<void> | undefined;
  // The runs' port requests, one file each, answered with `decide` like the agents' tool calls.
  const requests = createFileRequestBook(requestsDir, writer, () => ensureLayout(), sealing);
  const dataKeys = createFileDataKeys(join(dir, 'keys'), writer, () => ensureLayout());

  function ensureLayout(): Promise<void> {
    ready ??= Promise.all([
      mkdir(tmpDir, { recursive: true }),
      mkdir(join(dir, 'runs'), { recursive: true }),
      mkdir(join(dir, 'state'), { recursive: true }),
      mkdir(requestsDir, { recursive: true }),
    ]).then(
      () => undefined,
      (cause) => {
        ready = undefined;
        throw new StoreUnavailableError(`The checkpoint directory ${dir} cannot be created.`, {
          hint: 'Check COUNTERSIGN_STORE=file:DIR and that DIR is writable.',
          cause,
        });
      },
    );
    return ready;
  }

  /** Every path is built from validated ids and checked to stay inside the directory. */
  function inside(...parts: string[]): string {
    const path = resolve(dir, ...parts);
    if (!path.startsWith(dir + sep)) {
      throw new InvalidInputError(`The path ${parts.join('/')} would leave the checkpoint directory.`);
    }
    return path;
  }

  const runDir = (run: string) => {
    assertStoreId('run', run);
    return inside('runs', run);
  };

  async function readCheckpointAt(path: string): Promise<StoredCheckpoint | null> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    await sealing.prepare(text);
    return parseCheckpointFile(text, path, sealing);
  }

  /** Positions of the run's checkpoints, ascending. */
  async function positions(run: string): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(runDir(run));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    return names
      .map((name) => checkpointFilePattern.exec(name)?.[1])
      .filter((seq): seq is string => seq !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  async function checkpointAt(run: string, seq: number): Promise<StoredCheckpoint | null> {
    const path = join(runDir(run), checkpointFileName(seq));
    const checkpoint = await readCheckpointAt(path);
    if (checkpoint !== null && (checkpoint.run !== run || checkpoint.seq !== seq)) {
      throw new CorruptDataError(
        `The file ${path} holds checkpoint ${checkpoint.seq} of run ${checkpoint.run}, not ${seq} of ${run}.`,
        { hint: 'It was moved or copied by hand; put it back or remove it.' },
      );
    }
    return checkpoint;
  }

  /** The id of the run's checkpoint at `seq`, from the file's clear header; null when none. */
  async function checkpointIdAt(run: string, seq: number): Promise<string | null> {
    const path = join(runDir(run), checkpointFileName(seq));
    try {
      return checkpointFileId(await readFile(path, 'utf8'), path);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async function latest(run: string): Promise<StoredCheckpoint | null> {
    const seqs = await positions(run);
    const last = seqs.at(-1);
    if (last === undefined) return null;
    const checkpoint = await checkpointAt(run, last);
    return checkpoint;
  }

  async function readIndex(): Promise<IndexLine[]> {
    let text: string;
    try {
      text = await readFile(indexPath, 'utf8');
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    return parseIndex(text, indexPath);
  }

  /** Every answer file of a run, written before port requests were rows. */
  async function legacyAnswers(run: string): Promise<Map<string, LegacyAnswer>> {
    const folder = inside('runs', run, 'answers');
    const found = new Map<string, LegacyAnswer>();
    let names: string[];
    try {
      names = await readdir(folder);
    } catch (error) {
      if (isMissing(error)) return found;
      throw error;
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const path = join(folder, name);
      const answer = parseAnswerFile(await readFile(path, 'utf8'), path);
      found.set(answer.requestId, answer);
    }
    return found;
  }

  function statePath(namespace: string, key: string): string {
    return inside('state', safeFileName(namespace), `${safeFileName(key)}.json`);
  }

  async function readState(path: string): Promise<JsonValue | undefined> {
    try {
      const text = await readFile(path, 'utf8');
      await sealing.prepare(text);
      return parseStateFile(text, path, sealing);
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  const runIndex = createFileRunIndex(join(dir, 'run-index'), writer);

  const isRunId = (run: string): boolean => {
    try {
      assertStoreId('run', run);
      return true;
    } catch {
      return false; // not a name this store made
    }
  };

  /** The run directories, by name. */
  async function runNames(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(join(dir, 'runs'));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    return names.sort().filter(isRunId);
  }

  async function summaryOf(run: string): Promise<RunSummary | null> {
    const [first, last] = [await checkpointAt(run, 0), await latest(run)];
    if (first === null || last === null) return null;
    return toRunSummary(run, first.createdAt, last, checkpointCustomer(first));
  }

  /**
   * The run index holds every run once built: a store written before it is read whole once
   * (by whichever process needs the index first), its markers written from what the runs say.
   */
  function indexReady(): Promise<void> {
    return runIndex.ensureBuilt(async () => {
      await ensureLayout();
      for (const run of await runNames()) {
        const [first, last] = [await checkpointAt(run, 0), await latest(run)];
        const customer = first === null ? null : checkpointCustomer(first);
        if (customer !== null) await runIndex.noteCustomer(customer, run);
        if (last !== null && ENDED_RUN_STATUSES.has(last.status))
          await runIndex.noteEnded(last.createdAt, run);
      }
    });
  }

  /** What erasure and retention read runs by: the run index, each marker checked against the run. */
  const held: HeldRuns = {
    requests,
    async runsOf(customer) {
      await indexReady();
      const theirs: string[] = [];
      for (const run of await runIndex.customerRuns(customer)) {
        if (!isRunId(run)) continue;
        const first = await checkpointAt(run, 0);
        // No first checkpoint: a save that has not published yet (or never will); left be.
        if (first === null) continue;
        const owner = checkpointCustomer(first);
        if (owner === customer) theirs.push(run);
        // The run id was taken by someone else's run first: the marker was never true. Unless
        // the two ids differ in case only: on a file system that ignores case (macOS, Windows)
        // both share one folder, and this marker is the other customer's own, the only one
        // their erasure finds the run by.
        else if (owner === null || owner.toLowerCase() !== customer.toLowerCase())
          await runIndex.dropCustomer(customer, run);
      }
      return theirs;
    },
    async endedBefore(before, limit) {
      await indexReady();
      const found: string[] = [];
      for (const marker of await runIndex.endedMarkers()) {
        if (found.length >= limit) break;
        // Markers sort by their time: from here on nothing ended before the cutoff.
        if (marker.at !== null && marker.at >= before) break;
        if (!isRunId(marker.run)) continue;
        const last = await latest(marker.run);
        if (
          last !== null &&
          ENDED_RUN_STATUSES.has(last.status) &&
          last.createdAt === (marker.at ?? last.createdAt)
        ) {
          if (last.createdAt < before && !found.includes(marker.run)) found.push(marker.run);
        } else if (last === null || (marker.at !== null && last.createdAt > marker.at)) {
          // The run is gone, or went on after this checkpoint (resumed from an earlier one).
          await runIndex.dropEnded(marker.name);
        }
        // Otherwise the marker is newer than the run's latest: a save still publishing.
      }
      return found;
    },
    async statusOf(run) {
      return (await latest(run))?.status ?? null;
    },
    async removeRun(run) {
      const [first, last] = [await checkpointAt(run, 0), await latest(run)];
      const count = (await positions(run)).length;
      // The run's directory goes whole: checkpoints and legacy answer files.
      await rm(runDir(run), { recursive: true, force: true });
      const customer = first === null ? null : checkpointCustomer(first);
      if (customer !== null) await runIndex.dropCustomer(customer, run);
      if (last !== null && ENDED_RUN_STATUSES.has(last.status))
        await runIndex.dropEnded(endedMarkerName(last.createdAt, run));
      return count;
    },
    removeRequests: (ids) => requests.erase(ids),
  };

  const store: FileCheckpointStore = {
    kind: 'file',
    keepsAudit: false,
    dir,
    ...dataKeys,
    ...createRunErasure(held),

    checkpointPath(run, seq) {
      return join(runDir(run), checkpointFileName(seq));
    },

    async saveCheckpoint(checkpoint, expectedLatest, options = {}): Promise<SaveCheckpointResult> {
      assertCheckpointHeader(checkpoint, expectedLatest);
      const raised = options.requests ?? [];
      assertRaisedRequests(checkpoint, raised);
      await ensureLayout();
      const folder = runDir(checkpoint.run);
      const conflict = async (): Promise<SaveCheckpointResult> => ({
        saved: false,
        latest: await latest(checkpoint.run),
      });
      if (expectedLatest !== null) {
        // The position before this one must hold the checkpoint the caller read; that the
        // position after it is still free is what the exclusive publish below checks. Read
        // from disk every time (its clear id only): another process may have erased or
        // purged the run, or started a new one under its id, since this one last saw it.
        const previousId = await checkpointIdAt(checkpoint.run, checkpoint.seq - 1);
        if (previousId !== expectedLatest) {
          const current = await latest(checkpoint.run);
          if (current?.id === expectedLatest) {
            throw new InvalidInputError(
              `Checkpoint ${checkpoint.id} has seq ${checkpoint.seq}; the run's latest is ${current.seq}.`,
            );
          }
          return { saved: false, latest: current };
        }
      }
      // Sealed before any file is written: a key not loaded yet stops the call here.
      const text = checkpointFileText(checkpoint, sealing);
      // The run index first, so a published checkpoint is never missing from it.
      const customer = checkpoint.seq === 0 ? checkpointCustomer(checkpoint) : null;
      if (customer !== null) await runIndex.noteCustomer(customer, checkpoint.run);
      if (ENDED_RUN_STATUSES.has(checkpoint.status))
        await runIndex.noteEnded(checkpoint.createdAt, checkpoint.run);
      // Only a run's first checkpoint makes its folder: a later one whose folder went (the
      // run erased or purged by another process after the check above) is a conflict below,
      // never a run made again from the middle.
      if (checkpoint.seq === 0) await mkdir(folder, { recursive: true });
      const file = join(folder, checkpointFileName(checkpoint.seq));
      // The requests first, so a published checkpoint never waits on a request without a
      // file; a lost race takes them back. (A crash in between leaves a pending row no
      // checkpoint waits on: the expiry sweep ends it, and answering it is NOT_FOUND.)
      if (!(await requests.insert(raised))) {
        throw new InvalidInputError(`A request raised by checkpoint ${checkpoint.id} already exists.`);
      }
      const published = await writer.createExclusive(file, text).catch((error: unknown) => {
        if (checkpoint.seq > 0 && isMissing(error)) return false;
        throw error;
      });
      if (!published) {
        await requests.remove(raised);
        return conflict();
      }
      const line: IndexLine = {
        run: checkpoint.run,
        checkpoint: checkpoint.id,
        file: relative(dir, file).split(sep).join('/'),
        parent: checkpoint.parent,
      };
      await appendFile(indexPath, `${JSON.stringify(line)}\n`, { flag: 'a' });
      return { saved: true, checkpoint: structuredClone(checkpoint) };
    },

    async getCheckpoint(run, checkpointId) {
      assertStoreId('run', run);
      const line = (await readIndex()).find(
        (entry) => entry.run === run && entry.checkpoint === checkpointId,
      );
      if (line !== undefined) {
        const found = await readCheckpointAt(inside(...line.file.split('/')));
        if (found?.id === checkpointId && found.run === run) return found;
      }
      for (const seq of await positions(run)) {
        const checkpoint = await checkpointAt(run, seq);
        if (checkpoint?.id === checkpointId) return checkpoint;
      }
      return null;
    },

    async latestCheckpoint(run) {
      return latest(run);
    },

    async checkpointHistory(run) {
      const summaries = [];
      for (const seq of await positions(run)) {
        const checkpoint = await checkpointAt(run, seq);
        if (checkpoint !== null) summaries.push(toCheckpointSummary(checkpoint));
      }
      return summaries;
    },

    async listRuns() {
      const list: RunSummary[] = [];
      for (const run of await runNames()) {
        const summary = await summaryOf(run);
        if (summary !== null) list.push(summary);
      }
      return sortRuns(list);
    },

    // The file store has no index in a page's order: a page reads the runs it holds (as its
    // request pages read every request file), a customer's from the run index only.
    async pageRuns(query) {
      const plan = planRunPage(query);
      const customer = plan.exact.customer;
      const list: RunSummary[] = [];
      for (const run of customer === undefined ? await runNames() : await held.runsOf(customer)) {
        const summary = await summaryOf(run);
        if (summary !== null) list.push(summary);
      }
      return pageRunsInMemory(list, plan);
    },

    // A run written before requests were rows: its answer, if one was recorded in
    // runs/<run>/answers/, comes with the adopted row as its decision.
    async adoptRequests(rows) {
      await ensureLayout();
      for (const row of rows) {
        const answer = row.run === null ? undefined : (await legacyAnswers(row.run)).get(row.id);
        await requests.adopt(answer === undefined ? row : legacyRequestRowsWithAnswer(row, answer));
      }
    },
    getApproval: requests.getApproval,
    listApprovals: requests.listApprovals,
    pageRequests: requests.pageRequests,
    decisionStats: requests.decisionStats,
    listDue: requests.listDue,
    decide: requests.decide,
    recordApproval: requests.recordApproval,

    async getState(namespace, key) {
      return readState(statePath(namespace, key));
    },

    async setState(namespace, key, value) {
      const stored = stateValue(namespace, key, value);
      await ensureLayout();
      const path = statePath(namespace, key);
      await mkdir(join(path, '..'), { recursive: true });
      await writer.replace(path, stateFileText(namespace, key, stored, sealing));
    },

    async claimState(namespace, key, value) {
      const offered = stateValue(namespace, key, value);
      await ensureLayout();
      const path = statePath(namespace, key);
      await mkdir(join(path, '..'), { recursive: true });
      if (await writer.createExclusive(path, stateFileText(namespace, key, offered, sealing))) {
        return { won: true, value: structuredClone(offered) };
      }
      const existing = await readState(path);
      if (existing === undefined) throw new Error(`state ${namespace}/${key} vanished after it was created`);
      return { won: false, value: existing };
    },

    async close() {},
  };
  return store;
}
