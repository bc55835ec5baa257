import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApprovalRequest, Decision } from '../../core/approval.ts';
import { requestScope } from '../../crypto/scopes.ts';
import { approvalUpdateApplies, decisionApplies, dueRequests, matchesFilter } from '../approval-rules.ts';
import { assertStoreId } from '../checkpoint-rules.ts';
import { assertStatsQuery, statsOfRows } from '../decision-stats.ts';
import type { RequestBook } from '../ports/request-book.ts';
import { pageInMemory, planPage } from '../request-page.ts';
import type { AtomicWriter } from './atomic-file.ts';
import {
  approvalFileText,
  decisionFileText,
  parseApprovalFile,
  parseDecisionFile,
  parseRequestFile,
  requestFileText,
} from './file-records.ts';
import type { FileSealing } from './file-sealing.ts';

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
const DECISION_SUFFIX = '.decision.json';
/** `<id>.r<n>.json`: the row's state after its n-th partial approval. */
const REVISION_FILE = /\.r\d+\.json$/;

const byCreated = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1;

export interface FileRequestBook extends RequestBook {
  /**
   * Publishes the rows (each its own file, created exclusively); returns false, with none
   * left behind, when one exists already.
   */
  insert(requests: readonly ApprovalRequest[]): Promise<boolean>;
  /** Takes back rows `insert` published for a checkpoint that then lost its race. */
  remove(requests: readonly ApprovalRequest[]): Promise<void>;
  /** Deletes rows and their decisions (erasure, retention); returns how many rows there were. */
  erase(ids: readonly string[]): Promise<number>;
  /** Inserts the row unless it exists, with its decision if it has one (adoption of old runs). */
  adopt(request: ApprovalRequest): Promise<void>;
}

/**
 * Requests as files under `dir` (the checkpoint store's requests/):
 *
 *   <id>.json           the row as raised (pending), published once and never rewritten
 *   <id>.decision.json  its decision, published with an exclusive create: the compare-and-set
 *
 * A reader sees a request as decided exactly when the decision file exists, so two
 * processes deciding one request get one winner and the loser reads the winner's file.
 */
export function createFileRequestBook(
  dir: string,
  writer: AtomicWriter,
  ready: () => Promise<void>,
  sealing: FileSealing,
): FileRequestBook {
  const rowPath = (id: string) => {
    assertStoreId('request', id);
    return join(dir, `${id}.json`);
  };
  const decisionPath = (id: string) => join(dir, `${id}${DECISION_SUFFIX}`);
  const revisionPath = (id: string, revision: number) => join(dir, `${id}.r${revision}.json`);

  async function readText(path: string): Promise<string | null> {
    try {
      const text = await readFile(path, 'utf8');
      // The data keys it names are loaded before any of it is opened.
      await sealing.prepare(text);
      return text;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async function read(id: string): Promise<ApprovalRequest | null> {
    const path = rowPath(id);
    const text = await readText(path);
    if (text === null) return null;
    let request = parseRequestFile(text, path, sealing);
    // Partial approvals: each revision is its own file; the last one present is the state.
    for (let revision = 1; ; revision++) {
      const revisionText = await readText(revisionPath(id, revision));
      if (revisionText === null) break;
      request = {
        ...request,
        ...parseApprovalFile(revisionText, revisionPath(id, revision), sealing),
        revision,
      };
    }
    const decisionText = await readText(decisionPath(id));
    if (decisionText === null) return request;
    const decision = parseDecisionFile(decisionText, decisionPath(id), sealing);
    return { ...request, status: decision.verdict, decision };
  }

  async function readAll(): Promise<ApprovalRequest[]> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    const rows: ApprovalRequest[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || name.endsWith(DECISION_SUFFIX) || REVISION_FILE.test(name)) continue;
      const found = await read(name.slice(0, -'.json'.length));
      if (found !== null) rows.push(found);
    }
    return rows;
  }

  async function publishDecision(request: ApprovalRequest, decision: Decision): Promise<boolean> {
    // Sealed before anything is published, under the key of the request's customer (or run).
    const text = decisionFileText(decision, requestScope(request), sealing);
    return writer.createExclusive(decisionPath(request.id), text);
  }

  return {
    async insert(requests) {
      if (requests.length === 0) return true;
      await ready();
      await mkdir(dir, { recursive: true });
      // Every text sealed first: a key not loaded yet stops the call before any file is written.
      const texts = requests.map((request) => requestFileText(request, sealing));
      const published: ApprovalRequest[] = [];
      for (const [index, request] of requests.entries()) {
        if (!(await writer.createExclusive(rowPath(request.id), texts[index] as string))) {
          await this.remove(published);
          return false;
        }
        published.push(request);
      }
      return true;
    },

    async remove(requests) {
      for (const request of requests) await unlink(rowPath(request.id)).catch(() => undefined);
    },

    async erase(ids) {
      let erased = 0;
      for (const id of ids) {
        // The decision first: a row without its decision would read as pending again.
        await unlink(decisionPath(id)).catch((error: unknown) => {
          if (!isMissing(error)) throw error;
        });
        const removed = await unlink(rowPath(id)).then(
          () => true,
          (error: unknown) => {
            if (isMissing(error)) return false;
            throw error;
          },
        );
        if (removed) erased += 1;
      }
      return erased;
    },

    // Called while `ready` is still settling (it is how old runs are adopted): no await of it here.
    async adopt(request) {
      const text = requestFileText(request, sealing);
      if (request.decision !== null) decisionFileText(request.decision, requestScope(request), sealing);
      await mkdir(dir, { recursive: true });
      await writer.createExclusive(rowPath(request.id), text);
      if (request.decision !== null) await publishDecision(request, request.decision);
    },

    async getApproval(id) {
      await ready();
      return read(id);
    },

    async listApprovals(filter = {}) {
      await ready();
      return (await readAll()).filter((request) => matchesFilter(request, filter)).sort(byCreated);
    },

    async decisionStats(query) {
      assertStatsQuery(query);
      await ready();
      return statsOfRows(await readAll(), query);
    },

    async pageRequests(query) {
      planPage(query); // a bad query is refused before the files are read
      await ready();
      return pageInMemory(await readAll(), query);
    },

    async listDue(query) {
      await ready();
      return dueRequests(await readAll(), query);
    },

    async decide(id, decision) {
      await ready();
      const request = await read(id);
      if (request === null || !decisionApplies(request, decision)) return { won: false, request };
      if (!(await publishDecision(request, decision))) return { won: false, request: await read(id) };
      return { won: true, request: { ...request, status: decision.verdict, decision }, leased: false };
    },

    async recordApproval(id, update) {
      await ready();
      const request = await read(id);
      if (request === null || !approvalUpdateApplies(request, update)) return { won: false, request };
      const next = request.revision + 1;
      const { approvals, edit, requiredRole, approvalsNeeded } = update;
      const text = approvalFileText(
        { approvals, edit, requiredRole, approvalsNeeded },
        requestScope(request),
        sealing,
      );
      if (!(await writer.createExclusive(revisionPath(id, next), text))) {
        return { won: false, request: await read(id) };
      }
      return {
        won: true,
        request: { ...request, approvals, edit, requiredRole, approvalsNeeded, revision: next },
      };
    },
  };
}
