import { afterEach, beforeEach, expect } from 'vitest';
import type { Decision } from '../../core/approval.ts';
import { type AuditEntry, type AuditEvent, verifyAuditChain } from '../../core/audit.ts';
import type { JsonValue } from '../../core/json.ts';
import type { CheckpointStore, RunStatus, StoredCheckpoint } from '../checkpoint-store.ts';
import { answeredBy, at, portRequest } from './fixtures.ts';
import { describe, describeSuite, it, type SkipEntry } from './harness.ts';
import { runPageAttackCases } from './run-page-attack-cases.ts';
import { runPageCases } from './run-page-cases.ts';
import { expectPlainJsonState } from './state-values.ts';
import { storedEvent } from './stored-event.ts';

/**
 * How the kit gets checkpoint stores of a backend. Every test gets its own `create()`d
 * store; the kit closes it, then calls `destroy`.
 */
export interface CheckpointStoreInitializer<S extends CheckpointStore = CheckpointStore> {
  /** Shown in the suite title: `CheckpointStore conformance: NAME`. */
  name: string;
  create(): Promise<S>;
  destroy?(store: S): Promise<void>;
  /**
   * The store's audit trail, for a backend that keeps one (`keepsAudit: true`): the suite
   * then checks that audit events commit with the writes they come with, and only with
   * them. Leave it out for a backend without a trail (it must say `keepsAudit: false`).
   */
  audit?(store: S): Promise<AuditEntry[]>;
  /** True for a store that encrypts effect previews at rest (see StoreInitializer.sealsEffects). */
  sealsEffects?: boolean;
}

export interface CheckpointStoreConformanceOptions {
  /** Tests this backend does not support, reported as skipped with the reason. */
  skip?: readonly SkipEntry[];
}

/** A checkpoint of `run` at position `seq`, its parent the previous position's `id`. */
export function checkpoint(
  run: string,
  seq: number,
  overrides: Partial<StoredCheckpoint> & { body?: JsonValue } = {},
): StoredCheckpoint {
  return {
    id: `cp-${run}-${seq}`,
    run,
    seq,
    parent: seq === 0 ? null : `cp-${run}-${seq - 1}`,
    superstep: seq,
    createdAt: at(seq),
    workflow: 'refund',
    version: 1,
    status: 'running' satisfies RunStatus,
    body: { messages: [{ to: 'prepare', payload: 1040 }], note: 'Crème brûlée ✓' },
    ...overrides,
  };
}

/** Saves positions 0..count-1 of a linear run. */
export async function chain(store: CheckpointStore, run: string, count: number): Promise<void> {
  for (let seq = 0; seq < count; seq++) {
    const result = await store.saveCheckpoint(
      checkpoint(run, seq),
      seq === 0 ? null : `cp-${run}-${seq - 1}`,
    );
    if (!result.saved) throw new Error(`test setup could not save ${run}/${seq}`);
  }
}

/** An audit event of a workflow answer, as the runner writes it; `data` marks it apart. */
export function answerEvent(by: string, mark: JsonValue = by): AuditEvent {
  return storedEvent({
    kind: 'request.decided',
    session: 'wf.r',
    requestId: 'req_1',
    actor: by,
    data: { run: 'r', port: 'manager-approval', mark },
  });
}

/** An event no store can write (a BigInt has no JSON form): the write it comes with must roll back. */
export function unwritableEvent(): AuditEvent {
  return storedEvent({ ...answerEvent('mallory'), data: { mark: 10n as unknown as JsonValue } });
}

/**
 * The behaviour every CheckpointStore backend must share (memory, SQLite, PostgreSQL, the
 * file store), as the vitest suite `CheckpointStore conformance: NAME`. A backend whose
 * initializer has `audit` keeps an audit trail; the audited cases run for it.
 */
export function describeCheckpointStoreConformance<S extends CheckpointStore>(
  initializer: CheckpointStoreInitializer<S>,
  { skip = [] }: CheckpointStoreConformanceOptions = {},
): void {
  const { name } = initializer;
  const options = { audited: initializer.audit !== undefined };
  describeSuite(`CheckpointStore conformance: ${name}`, skip, () => {
    let current: S | undefined;
    const store = (): CheckpointStore => {
      if (current === undefined) throw new Error('conformance: no store outside a test');
      return current;
    };
    const auditTrail = async (): Promise<AuditEntry[]> => {
      if (current === undefined || initializer.audit === undefined)
        throw new Error(`conformance: ${name} gave no audit trail`);
      return initializer.audit(current);
    };

    beforeEach(async () => {
      current = await initializer.create();
    });

    afterEach(async () => {
      if (current === undefined) return;
      const closing = current;
      current = undefined;
      await closing.close();
      await initializer.destroy?.(closing);
    });

    describe('checkpoints', () => {
      it('knows nothing of a run that was never saved', async () => {
        expect(await store().latestCheckpoint('nope')).toBeNull();
        expect(await store().getCheckpoint('nope', 'cp-x')).toBeNull();
        expect(await store().checkpointHistory('nope')).toEqual([]);
        expect(await store().listRuns()).toEqual([]);
      });

      it('saves, reads back and links each checkpoint to its parent', async () => {
        await chain(store(), 'refund-1040', 3);
        expect(await store().getCheckpoint('refund-1040', 'cp-refund-1040-1')).toEqual(
          checkpoint('refund-1040', 1),
        );
        expect(await store().latestCheckpoint('refund-1040')).toEqual(checkpoint('refund-1040', 2));
        expect(await store().checkpointHistory('refund-1040')).toEqual([
          { checkpointId: 'cp-refund-1040-0', parentCheckpointId: null, superstep: 0, createdAt: at(0) },
          {
            checkpointId: 'cp-refund-1040-1',
            parentCheckpointId: 'cp-refund-1040-0',
            superstep: 1,
            createdAt: at(1),
          },
          {
            checkpointId: 'cp-refund-1040-2',
            parentCheckpointId: 'cp-refund-1040-1',
            superstep: 2,
            createdAt: at(2),
          },
        ]);
      });

      it('does not find a checkpoint under another run', async () => {
        await chain(store(), 'a', 1);
        await chain(store(), 'b', 1);
        expect(await store().getCheckpoint('b', 'cp-a-0')).toBeNull();
      });

      it('refuses a second first checkpoint for a run: the run id is taken', async () => {
        await chain(store(), 'r', 1);
        const again = await store().saveCheckpoint(checkpoint('r', 0, { id: 'cp-other' }), null);
        expect(again).toEqual({ saved: false, latest: checkpoint('r', 0) });
        expect(await store().checkpointHistory('r')).toHaveLength(1);
      });

      it('refuses a save computed against a checkpoint that is no longer the latest', async () => {
        await chain(store(), 'r', 2);
        const stale = await store().saveCheckpoint(
          checkpoint('r', 1, { id: 'cp-stale', parent: 'cp-r-0' }),
          'cp-r-0',
        );
        expect(stale).toEqual({ saved: false, latest: checkpoint('r', 1) });
        const ok = await store().saveCheckpoint(checkpoint('r', 2), 'cp-r-1');
        expect(ok.saved).toBe(true);
      });

      it('gives exactly one winner when writers race for the same position', async () => {
        await chain(store(), 'r', 1);
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            store().saveCheckpoint(checkpoint('r', 1, { id: `cp-racer-${i}`, parent: 'cp-r-0' }), 'cp-r-0'),
          ),
        );
        const winners = results.filter((result) => result.saved);
        expect(winners).toHaveLength(1);
        const latest = await store().latestCheckpoint('r');
        expect(winners[0]).toMatchObject({ checkpoint: { id: latest?.id } });
        expect(await store().checkpointHistory('r')).toHaveLength(2);
      });

      it('keeps branches: two children of one parent are both in the history', async () => {
        await chain(store(), 'r', 2);
        await store().saveCheckpoint(
          checkpoint('r', 2, { id: 'cp-branch', parent: 'cp-r-0', superstep: 1 }),
          'cp-r-1',
        );
        const history = await store().checkpointHistory('r');
        expect(history.map((entry) => [entry.checkpointId, entry.parentCheckpointId])).toEqual([
          ['cp-r-0', null],
          ['cp-r-1', 'cp-r-0'],
          ['cp-branch', 'cp-r-0'],
        ]);
        expect((await store().latestCheckpoint('r'))?.id).toBe('cp-branch');
        // The checkpoint the branch started from is unchanged.
        expect(await store().getCheckpoint('r', 'cp-r-0')).toEqual(checkpoint('r', 0));
      });

      it('refuses malformed headers and unsafe run ids with INVALID_INPUT', async () => {
        await expect(store().saveCheckpoint(checkpoint('r', 1), null)).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
        await expect(
          store().saveCheckpoint(checkpoint('r', 0, { parent: 'cp-x' }), null),
        ).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
        for (const run of ['../escape', 'a/b', '..', 'x..y', '', 'a\\b', '.hidden']) {
          await expect(
            store().saveCheckpoint({ ...checkpoint('r', 0), run }, null),
            `run id ${JSON.stringify(run)}`,
          ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
          await expect(store().latestCheckpoint(run)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        }
      });

      it('refuses a seq that does not follow the latest', async () => {
        await chain(store(), 'r', 2);
        await expect(
          store().saveCheckpoint(checkpoint('r', 5, { parent: 'cp-r-1' }), 'cp-r-1'),
        ).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
        expect(await store().checkpointHistory('r')).toHaveLength(2);
      });

      it('hands out copies', async () => {
        const original = checkpoint('r', 0);
        await store().saveCheckpoint(original, null);
        (original.body as { note: string }).note = 'changed';
        const read = await store().latestCheckpoint('r');
        expect(read?.body).toMatchObject({ note: 'Crème brûlée ✓' });
      });
    });

    describe('runs', () => {
      it('lists runs with the status and version of their latest checkpoint', async () => {
        await chain(store(), 'a', 2);
        await store().saveCheckpoint(
          checkpoint('a', 2, { status: 'awaiting_input', version: 2, createdAt: at(50) }),
          'cp-a-1',
        );
        await store().saveCheckpoint(checkpoint('b', 0, { createdAt: at(10), status: 'completed' }), null);
        expect(await store().listRuns()).toEqual([
          {
            run: 'a',
            workflow: 'refund',
            version: 2,
            status: 'awaiting_input',
            checkpoint: 'cp-a-2',
            customer: null,
            createdAt: at(0),
            updatedAt: at(50),
          },
          {
            run: 'b',
            workflow: 'refund',
            version: 1,
            status: 'completed',
            checkpoint: 'cp-b-0',
            customer: null,
            createdAt: at(10),
            updatedAt: at(10),
          },
        ]);
      });

      runPageCases(store);
      runPageAttackCases(store);
    });

    describe('port requests (the request book)', () => {
      // A run waiting at a port: its checkpoint raises the request's row in the same write.
      const raise = async (ids: string[] = ['req_1']) => {
        const saved = await store().saveCheckpoint(checkpoint('r', 0), null, {
          requests: ids.map((id) => portRequest('r', id)),
        });
        expect(saved.saved).toBe(true);
      };
      const expiry: Decision = {
        verdict: 'expired',
        by: 'countersign',
        reason: 'expired',
        at: at(30),
        kind: 'expiry',
      };

      it('a saved checkpoint raises its rows; a refused save raises none', async () => {
        await raise();
        expect(await store().getApproval('req_1')).toEqual(portRequest('r', 'req_1'));
        const lost = await store().saveCheckpoint(checkpoint('r', 0, { id: 'cp-other' }), null, {
          requests: [portRequest('r', 'req_lost')],
        });
        expect(lost.saved).toBe(false);
        expect(await store().getApproval('req_lost')).toBeNull();
        expect((await store().listApprovals({ run: 'r' })).map((row) => row.id)).toEqual(['req_1']);
        expect(await store().listApprovals({ run: 'other' })).toEqual([]);
      });

      it('pages its port requests by run, kind and text, with a cursor, and answered ones in the decided order', async () => {
        await raise(['req_1', 'req_2', 'req_3']);
        const first = await store().pageRequests({ limit: 2, run: 'r', kind: 'port', count: true });
        expect(first.items.map((row) => row.id)).toEqual(['req_1', 'req_2']);
        expect(first.total).toEqual({ count: 3, exact: true });
        const second = await store().pageRequests({
          limit: 2,
          run: 'r',
          kind: 'port',
          after: first.next ?? '',
        });
        expect(second).toMatchObject({ next: null });
        expect(second.items.map((row) => row.id)).toEqual(['req_3']);
        // The cursor is bound to its filters: another run or no kind is another list.
        for (const other of [{ run: 'other', kind: 'port' as const }, { run: 'r' }])
          await expect(
            store().pageRequests({ limit: 2, ...other, after: first.next ?? '' }),
          ).rejects.toMatchObject({
            code: 'INVALID_CURSOR',
            message: expect.stringContaining('other filters'),
          });
        await store().decide('req_2', answeredBy('alice', 20));
        const decided = await store().pageRequests({ limit: 5, sort: 'decided' });
        expect(decided.items.map((row) => row.id)).toEqual(['req_2']);
        await expect(store().pageRequests({ limit: 2, after: 'nope' })).rejects.toMatchObject({
          code: 'INVALID_CURSOR',
        });
      });

      // A store that encrypts effect previews at rest cannot search them in SQL: none match.
      it('finds its port requests by text in their effect preview (none where effects are sealed)', async () => {
        await raise(['req_1', 'req_2', 'req_3']);
        const found = (await store().pageRequests({ limit: 5, text: 'REFUND 35' })).items;
        expect(found).toHaveLength(initializer.sealsEffects ? 0 : 3);
      });

      it('refuses to raise what is not a pending port request of the run', async () => {
        for (const wrong of [
          portRequest('other', 'req_x'),
          { ...portRequest('r', 'req_x'), kind: 'tool-call' as const },
          { ...portRequest('r', 'req_x'), args: { amount: 3500 } },
        ]) {
          await expect(
            store().saveCheckpoint(checkpoint('r', 0), null, { requests: [wrong] }),
          ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        }
        expect(await store().latestCheckpoint('r')).toBeNull();
        expect(await store().getApproval('req_x')).toBeNull();
      });

      it('records the first answer and gives later ones the row as the winner left it', async () => {
        await raise();
        const won = await store().decide('req_1', answeredBy('alice', 20));
        expect(won).toMatchObject({
          won: true,
          request: { status: 'answered', decision: answeredBy('alice', 20) },
        });
        const lost = await store().decide('req_1', answeredBy('bob', 21, { approved: false }));
        expect(lost).toMatchObject({
          won: false,
          request: { status: 'answered', decision: { by: 'alice' } },
        });
        expect((await store().getApproval('req_1'))?.decision).toEqual(answeredBy('alice', 20));
      });

      it('has exactly one winner among concurrent answers', async () => {
        await raise();
        const results = await Promise.all(
          ['a', 'b', 'c', 'd', 'e'].map((by) => store().decide('req_1', answeredBy(by, 20))),
        );
        expect(results.filter((result) => result.won)).toHaveLength(1);
        const stored = await store().getApproval('req_1');
        for (const result of results) expect(result.request?.decision).toEqual(stored?.decision);
      });

      it('records partial approvals once per revision; concurrent ones get one winner; decide completes it', async () => {
        await raise();
        const approval = (by: string) => ({
          revision: 0,
          at: at(20),
          approvals: [{ by, at: at(20), reason: null }],
          edit: null,
          requiredRole: 'manager',
          approvalsNeeded: 2,
        });
        const results = await Promise.all(
          ['a', 'b', 'c'].map((by) => store().recordApproval('req_1', approval(by))),
        );
        expect(results.filter((result) => result.won)).toHaveLength(1);
        const stored = await store().getApproval('req_1');
        expect(stored).toMatchObject({ status: 'pending', revision: 1, approvalsNeeded: 2 });
        expect(stored?.approvals).toHaveLength(1);
        const stale = await store().recordApproval('req_1', approval('d'));
        expect(stale).toMatchObject({ won: false, request: { revision: 1 } });
        expect((await store().decide('req_1', answeredBy('e', 21))).won).toBe(true);
        expect(await store().recordApproval('req_1', { ...approval('f'), revision: 1 })).toMatchObject({
          won: false,
          request: { status: 'answered', revision: 1 },
        });
      });

      it("refuses a person's answer past the expiry; the expiry is recorded once and stands", async () => {
        await raise();
        expect((await store().decide('req_1', answeredBy('alice', 100))).won).toBe(false);
        expect((await store().getApproval('req_1'))?.status).toBe('pending');
        expect(await store().decide('req_1', expiry)).toMatchObject({
          won: true,
          request: { status: 'expired' },
        });
        expect(await store().decide('req_1', answeredBy('alice', 20))).toMatchObject({
          won: false,
          request: { status: 'expired' },
        });
      });

      it('lists what is due, soonest first, pending only', async () => {
        await store().saveCheckpoint(checkpoint('r', 0), null, {
          requests: [
            portRequest('r', 'req_late', { expiresAt: at(200) }),
            portRequest('r', 'req_soon', { expiresAt: at(50) }),
            portRequest('r', 'req_done', { expiresAt: at(40) }),
          ],
        });
        await store().decide('req_done', answeredBy('alice', 20));
        expect((await store().listDue({ at: at(100), limit: 10 })).map((row) => row.id)).toEqual([
          'req_soon',
        ]);
        expect((await store().listDue({ at: at(300), limit: 10 })).map((row) => row.id)).toEqual([
          'req_soon',
          'req_late',
        ]);
        expect(await store().listDue({ at: at(300), limit: 1 })).toHaveLength(1);
        expect(await store().listDue({ at: at(300), limit: 10, kind: 'tool-call' })).toEqual([]);
      });
    });

    it(`says whether it keeps an audit trail (${options.audited})`, () => {
      expect(store().keepsAudit).toBe(options.audited);
    });

    if (!options.audited) {
      describe('without an audit trail', () => {
        it('ignores audit events given with a write: the write is recorded all the same', async () => {
          const saved = await store().saveCheckpoint(checkpoint('r', 0), null, {
            audit: [answerEvent('x')],
            requests: [portRequest('r', 'req_1')],
          });
          expect(saved.saved).toBe(true);
          expect((await store().decide('req_1', answeredBy('alice', 20), [answerEvent('alice')])).won).toBe(
            true,
          );
        });
      });
    }

    if (options.audited) {
      describe('audit entries commit with their write', () => {
        const raiseOne = async () => {
          await store().saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
        };

        it('a won answer appends its entries; a lost one appends none; the chain verifies', async () => {
          await raiseOne();
          expect((await store().decide('req_1', answeredBy('alice', 20), [answerEvent('alice')])).won).toBe(
            true,
          );
          const lost = await store().decide('req_1', answeredBy('bob', 20), [answerEvent('bob')]);
          expect(lost).toMatchObject({ won: false, request: { decision: { by: 'alice' } } });
          const entries = await auditTrail();
          expect(entries).toMatchObject([
            {
              seq: 1,
              at: at(20),
              kind: 'request.decided',
              session: 'wf.r',
              requestId: 'req_1',
              actor: 'alice',
            },
          ]);
          expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 1 });
        });

        it('concurrent answers: exactly one entry, the winner’s', async () => {
          await raiseOne();
          const results = await Promise.all(
            ['a', 'b', 'c', 'd', 'e'].map((by) =>
              store().decide('req_1', answeredBy(by, 20), [answerEvent(by)]),
            ),
          );
          expect(results.filter((result) => result.won)).toHaveLength(1);
          const stored = await store().getApproval('req_1');
          const entries = await auditTrail();
          expect(entries).toHaveLength(1);
          expect(entries[0]?.actor).toBe(stored?.decision?.by);
          expect(verifyAuditChain(entries).ok).toBe(true);
        });

        it('an entry that cannot be written rolls the answer back: nothing is recorded, the request stays answerable', async () => {
          await raiseOne();
          await expect(
            store().decide('req_1', answeredBy('mallory', 20), [answerEvent('x'), unwritableEvent()]),
          ).rejects.toThrow();
          expect((await store().getApproval('req_1'))?.status).toBe('pending');
          expect(await auditTrail()).toEqual([]);
          expect((await store().decide('req_1', answeredBy('alice', 20), [answerEvent('alice')])).won).toBe(
            true,
          );
          expect((await auditTrail()).map((entry) => entry.actor)).toEqual(['alice']);
        });

        it('an entry that cannot be written rolls back the checkpoint and the requests it raises', async () => {
          await expect(
            store().saveCheckpoint(checkpoint('r', 0), null, {
              audit: [unwritableEvent()],
              requests: [portRequest('r', 'req_1')],
            }),
          ).rejects.toThrow();
          expect(await store().latestCheckpoint('r')).toBeNull();
          expect(await store().getApproval('req_1')).toBeNull();
        });

        it('a saved checkpoint appends its entries at its createdAt; a refused save appends none', async () => {
          const event = storedEvent({ ...answerEvent('refund'), kind: 'request.raised' });
          expect((await store().saveCheckpoint(checkpoint('r', 0), null, { audit: [event] })).saved).toBe(
            true,
          );
          const again = await store().saveCheckpoint(checkpoint('r', 0, { id: 'cp-other' }), null, {
            audit: [event],
          });
          expect(again.saved).toBe(false);
          const stale = await store().saveCheckpoint(checkpoint('r', 1, { parent: 'cp-x' }), 'cp-x', {
            audit: [event],
          });
          expect(stale.saved).toBe(false);
          const entries = await auditTrail();
          expect(entries).toMatchObject([{ seq: 1, at: at(0), kind: 'request.raised' }]);
          expect(verifyAuditChain(entries).ok).toBe(true);
        });

        it('an entry that cannot be written rolls the checkpoint back', async () => {
          await chain(store(), 'r', 1);
          await expect(
            store().saveCheckpoint(checkpoint('r', 1), 'cp-r-0', { audit: [unwritableEvent()] }),
          ).rejects.toThrow();
          expect((await store().latestCheckpoint('r'))?.id).toBe('cp-r-0');
          expect(await store().checkpointHistory('r')).toHaveLength(1);
          expect(await auditTrail()).toEqual([]);
          expect((await store().saveCheckpoint(checkpoint('r', 1), 'cp-r-0')).saved).toBe(true);
        });
      });
    }

    describe('erasure and retention of runs', () => {
      /** A run for `customer` waiting on one port request, at checkpoint 0. */
      const waitingRun = async (run: string, customer: string, id: string) => {
        const saved = await store().saveCheckpoint(checkpoint(run, 0, { status: 'awaiting_input' }), null, {
          requests: [portRequest(run, id, { customer })],
        });
        if (!saved.saved) throw new Error(`test setup could not save ${run}`);
      };

      it("erases a customer's runs with their checkpoints and requests, and nobody else's", async () => {
        await waitingRun('r-ann', 'ann', 'req_ann');
        await waitingRun('r-bob', 'bob', 'req_bob');
        expect((await store().listPendingOf('ann')).map((row) => row.id)).toEqual(['req_ann']);
        const counts = await store().erasePrincipal({ principal: 'ann', at: at(50) });
        expect(counts).toMatchObject({ runs: 1, checkpoints: 1, requests: 1 });
        expect(await store().latestCheckpoint('r-ann')).toBeNull();
        expect(await store().getApproval('req_ann')).toBeNull();
        expect((await store().listRuns()).map((run) => run.run)).toEqual(['r-bob']);
        expect(await store().getApproval('req_bob')).not.toBeNull();
        expect(await store().erasePrincipal({ principal: 'ann', at: at(51) })).toMatchObject({
          runs: 0,
          requests: 0,
        });
      });

      it('lists the runs erasure removes: started for the customer, or named by a request of theirs, decided too', async () => {
        const started = await store().saveCheckpoint(checkpoint('r-started', 0, { customer: 'ann' }), null);
        if (!started.saved) throw new Error('test setup could not save r-started');
        // Started for nobody: only its request, answered before any erasure, says it is ann's.
        await waitingRun('r-decided', 'ann', 'req_decided');
        expect((await store().decide('req_decided', answeredBy('alice', 20))).won).toBe(true);
        await waitingRun('r-bob', 'bob', 'req_bob');
        expect((await store().runsToErase('ann')).sort()).toEqual(['r-decided', 'r-started']);
        expect(await store().runsToErase('nobody')).toEqual([]);
        expect(await store().erasePrincipal({ principal: 'ann', at: at(50) })).toMatchObject({ runs: 2 });
        expect(await store().runsToErase('ann')).toEqual([]);
        expect(await store().runsToErase('bob')).toEqual(['r-bob']);
      });

      it('purges ended runs past their cutoff, never one that waits', async () => {
        await waitingRun('r-wait', 'ann', 'req_wait');
        await chain(store(), 'r-done', 1);
        expect(
          (await store().saveCheckpoint(checkpoint('r-done', 1, { status: 'completed' }), 'cp-r-done-0'))
            .saved,
        ).toBe(true);
        const before = { runs: at(90) };
        expect(
          await store().purgeBatch({ before, limit: 10, at: at(95), nowMs: 0, dryRun: true }),
        ).toMatchObject({
          runs: 1,
        });
        expect((await store().listRuns()).map((run) => run.run).sort()).toEqual(['r-done', 'r-wait']);
        expect(await store().purgeBatch({ before, limit: 10, at: at(95), nowMs: 0 })).toMatchObject({
          runs: 1,
        });
        expect((await store().listRuns()).map((run) => run.run)).toEqual(['r-wait']);
        expect(await store().latestCheckpoint('r-done')).toBeNull();
        expect((await store().getApproval('req_wait'))?.status).toBe('pending');
      });
    });

    describe('application state', () => {
      it('gets, sets and claims once', async () => {
        expect(await store().getState('bookstore', 'refund:1040')).toBeUndefined();
        expect(await store().claimState('bookstore', 'refund:1040', { amount: 35 })).toEqual({
          won: true,
          value: { amount: 35 },
        });
        expect(await store().claimState('bookstore', 'refund:1040', { amount: 99 })).toEqual({
          won: false,
          value: { amount: 35 },
        });
        await store().setState('bookstore', 'order:1040', { status: 'Delivered' });
        expect(await store().getState('bookstore', 'order:1040')).toEqual({ status: 'Delivered' });
        await store().setState('bookstore', 'order:1040', null);
        expect(await store().getState('bookstore', 'order:1040')).toBeNull();
        expect(await store().getState('other', 'refund:1040')).toBeUndefined();
      });

      it('keeps values as plain JSON, alike on every backend, and refuses what has none, writing nothing', async () => {
        await expectPlainJsonState(store());
      });

      it('keeps keys that only differ in characters a file name cannot hold apart', async () => {
        await store().setState('ns', '../x', 1);
        await store().setState('ns', '..%2Fx', 2);
        await store().setState('ns/..', 'x', 3);
        expect(await store().getState('ns', '../x')).toBe(1);
        expect(await store().getState('ns', '..%2Fx')).toBe(2);
        expect(await store().getState('ns/..', 'x')).toBe(3);
      });

      it('has exactly one winner among concurrent claims', async () => {
        const results = await Promise.all(
          [1, 2, 3, 4, 5].map((n) => store().claimState('bookstore', 'refund:1044', { n })),
        );
        expect(results.filter((result) => result.won)).toHaveLength(1);
      });
    });
  });
}
