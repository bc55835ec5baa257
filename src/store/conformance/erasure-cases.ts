import { expect } from 'vitest';
import { verifyAuditChain } from '../../core/audit.ts';
import { deliveryIdsOf } from '../../core/delivery-id.ts';
import type { ErasureCounts, PurgeCounts } from '../ports/erasure.ts';
import { isOutbox } from '../ports/server/outbox.ts';
import type { Store } from '../store.ts';
import { at, atMs, byPerson, type ConformanceContext, event, request, user } from './fixtures.ts';
import { describe, it } from './harness.ts';
import { storedEvent } from './stored-event.ts';

const NOTHING: ErasureCounts = {
  sessions: 0,
  messages: 0,
  requests: 0,
  executions: 0,
  runs: 0,
  checkpoints: 0,
  auditEntries: 0,
  deliveries: 0,
};

/** A session of `principal` with one message and one request, as a run leaves them. */
async function sessionWithRequest(store: Store, session: string, principal: string, id: string) {
  await store.ensureSession({ id: session, agent: 'bookstore', principal, at: at(0) });
  await store.acquireLease({ session, owner: 'run-1', untilMs: atMs(1000), nowMs: atMs(0) });
  await store.commitStep({
    session,
    leaseOwner: 'run-1',
    expectedMessageCount: 0,
    append: [user(`order for ${principal}: 12 Elm Street`)],
    batch: { messageSeq: 0, calls: [] },
    approvals: [
      request({ id, session, customer: principal, args: { address: `${principal} lives at 12 Elm` } }),
    ],
    audit: [
      storedEvent({
        kind: 'request.raised',
        session,
        requestId: id,
        actor: 'model',
        data: { args: `${principal} lives at 12 Elm` },
      }),
    ],
    releaseLease: true,
    at: at(10),
  });
}

/** Decides the request, records a finished ledger row and closes the batch. */
async function settle(store: Store, session: string, id: string, seconds = 20) {
  await store.decide(id, byPerson('approved', seconds - 5), [event('request.decided', session, id)]);
  await store.startExecution({
    requestId: id,
    session,
    callId: `call-${id}`,
    tool: 'place_order',
    args: { address: 'secret' },
    idempotencyKey: `countersign:${id}`,
    at: at(seconds - 4),
  });
  await store.finishExecution(id, {
    status: 'succeeded',
    result: { receipt: 'secret receipt' },
    at: at(seconds - 3),
  });
  await store.acquireLease({ session, owner: 'run-2', untilMs: atMs(seconds + 1), nowMs: atMs(seconds - 2) });
  const current = await store.getSession(session);
  await store.commitStep({
    session,
    leaseOwner: 'run-2',
    expectedMessageCount: current?.messageCount ?? 0,
    append: [{ role: 'assistant', text: 'Done: shipped to 12 Elm Street.' }],
    batch: null,
    releaseLease: true,
    at: at(seconds),
  });
}

/**
 * The entries erasure and purge write beside what they erase (src/erasure/): verification
 * counts the entries erased at an instant against them.
 */
const erasedTrail = (removed: ErasureCounts) => [
  storedEvent({
    kind: 'principal.erased',
    session: null,
    requestId: null,
    actor: 'admin',
    data: { ...removed },
  }),
];
const audited = {
  audit: (removed: PurgeCounts) => [
    storedEvent({
      kind: 'retention.purged',
      session: null,
      requestId: null,
      actor: 'countersign',
      data: { ...removed },
    }),
  ],
};

export function erasureCases(ctx: ConformanceContext): void {
  describe('erasure', () => {
    it("lists a customer's pending requests, and nobody else's", async () => {
      const store = ctx.store();
      await sessionWithRequest(store, 's-ann', 'ann', 'r-ann');
      await sessionWithRequest(store, 's-bob', 'bob', 'r-bob');
      expect((await store.listPendingOf('ann')).map((row) => row.id)).toEqual(['r-ann']);
      await store.decide('r-ann', byPerson('rejected', 11));
      expect(await store.listPendingOf('ann')).toEqual([]);
      expect(await store.listPendingOf('nobody')).toEqual([]);
    });

    it("removes a customer's sessions, messages, requests and ledger rows; erases their audit data in place", async () => {
      const store = ctx.store();
      await sessionWithRequest(store, 's-ann', 'ann', 'r-ann');
      await settle(store, 's-ann', 'r-ann');
      await sessionWithRequest(store, 's-bob', 'bob', 'r-bob');
      const before = await store.listAudit();
      let seen: ErasureCounts | undefined;
      const counts = await store.erasePrincipal({
        principal: 'ann',
        at: at(50),
        audit: (removed) => {
          seen = removed;
          return [
            storedEvent({
              kind: 'principal.erased',
              session: null,
              requestId: null,
              actor: 'admin',
              data: { principal: 'ann', ...removed },
            }),
          ];
        },
      });
      expect(counts).toMatchObject({ sessions: 1, messages: 2, requests: 1, executions: 1, auditEntries: 2 });
      expect(seen).toEqual(counts);
      expect(await store.getSession('s-ann')).toBeNull();
      expect(await store.loadMessages('s-ann')).toEqual([]);
      expect(await store.getApproval('r-ann')).toBeNull();
      expect(await store.getExecution('r-ann')).toBeNull();
      expect(await store.listExecutions({ session: 's-ann' })).toEqual([]);
      // Bob's are untouched.
      expect(await store.getApproval('r-bob')).not.toBeNull();
      expect(await store.loadMessages('s-bob')).toHaveLength(1);

      const after = await store.listAudit();
      expect(after).toHaveLength(before.length + 1);
      const anns = after.filter((entry) => entry.session === 's-ann');
      expect(anns.length).toBe(2);
      for (const entry of anns) {
        expect(entry.data).toEqual({});
        expect(entry.erasedAt).toBe(at(50));
      }
      expect(JSON.stringify(after)).not.toContain('ann lives at 12 Elm');
      expect(JSON.stringify(after)).toContain('bob lives at 12 Elm');
      expect(after.at(-1)).toMatchObject({
        kind: 'principal.erased',
        actor: 'admin',
        data: { principal: 'ann' },
      });
      expect(verifyAuditChain(after)).toMatchObject({ ok: true, entries: before.length + 1, erased: 2 });
    });

    it('erasing a principal reaches the audit data of its session whose id holds a lone surrogate', async () => {
      // The audit row keeps the session id as UTF-8 stores it (U+FFFD); erasure must match it.
      const store = ctx.store();
      const session = 's\ud800';
      const id = 'r\udfff';
      await store.ensureSession({ id: session, agent: 'bookstore', principal: 'ann', at: at(0) });
      await store.acquireLease({ session, owner: 'run-1', untilMs: atMs(1000), nowMs: atMs(0) });
      await store.commitStep({
        session,
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('order for ann')],
        batch: { messageSeq: 0, calls: [] },
        approvals: [request({ id, session, customer: null, args: { address: 'ann lives at 12 Elm' } })],
        audit: [
          storedEvent({
            kind: 'request.raised',
            session,
            requestId: id,
            actor: 'model',
            data: { args: 'ann lives at 12 Elm' },
          }),
        ],
        releaseLease: true,
        at: at(10),
      });
      const counts = await store.erasePrincipal({
        principal: 'ann',
        at: at(50),
        audit: (removed) => [
          storedEvent({
            kind: 'principal.erased',
            session: null,
            requestId: null,
            actor: 'admin',
            data: { ...removed },
          }),
        ],
      });
      expect(counts).toMatchObject({ sessions: 1, requests: 1, auditEntries: 1 });
      const after = await store.listAudit();
      expect(JSON.stringify(after)).not.toContain('ann lives at 12 Elm');
      expect(verifyAuditChain(after).ok).toBe(true);
    });

    it('erasing an unknown principal, or the same one twice, changes nothing', async () => {
      const store = ctx.store();
      await sessionWithRequest(store, 's-ann', 'ann', 'r-ann');
      await store.decide('r-ann', byPerson('rejected', 11));
      expect(await store.erasePrincipal({ principal: 'nobody', at: at(50), audit: () => [] })).toEqual(
        NOTHING,
      );
      const first = await store.erasePrincipal({ principal: 'ann', at: at(50), audit: erasedTrail });
      expect(first.sessions).toBe(1);
      const trail = await store.listAudit();
      expect(await store.erasePrincipal({ principal: 'ann', at: at(60), audit: () => [] })).toEqual(NOTHING);
      expect(await store.listAudit()).toEqual(trail);
    });

    it("removes the outbox rows of the customer's requests", async () => {
      const store = ctx.store();
      if (!isOutbox(store)) return;
      await sessionWithRequest(store, 's-ann', 'ann', 'r-ann');
      await sessionWithRequest(store, 's-bob', 'bob', 'r-bob');
      const [annId] = deliveryIdsOf('r-ann');
      const [bobId] = deliveryIdsOf('r-bob');
      for (const id of [annId!, bobId!])
        await store.enqueueDelivery({
          id,
          kind: 'approval.requested',
          payload: { secret: id },
          createdAt: at(11),
          nextAtMs: atMs(11),
        });
      const counts = await store.erasePrincipal({ principal: 'ann', at: at(50), audit: erasedTrail });
      expect(counts.deliveries).toBe(1);
      expect(await store.getDelivery(annId!)).toBeNull();
      expect(await store.getDelivery(bobId!)).not.toBeNull();
    });
  });

  describe('retention', () => {
    it('removes finished sessions, decided requests and audit data past their cutoff, never what waits', async () => {
      const store = ctx.store();
      await sessionWithRequest(store, 's-done', 'ann', 'r-done');
      await settle(store, 's-done', 'r-done', 20);
      await sessionWithRequest(store, 's-wait', 'bob', 'r-wait');
      const cutoffs = { sessions: at(30), requests: at(30), audit: at(15) };
      const dry = await store.purgeBatch({
        before: cutoffs,
        limit: 100,
        at: at(40),
        nowMs: atMs(40),
        dryRun: true,
      });
      expect(dry).toEqual({ sessions: 1, runs: 0, requests: 1, auditEntries: 2 });
      expect(await store.getSession('s-done')).not.toBeNull();

      const done = await store.purgeBatch({
        before: cutoffs,
        limit: 100,
        at: at(40),
        nowMs: atMs(40),
        ...audited,
      });
      expect(done).toMatchObject({ sessions: 1, runs: 0, auditEntries: 2 });
      expect(await store.getSession('s-done')).toBeNull();
      expect(await store.getApproval('r-done')).toBeNull();
      expect(await store.getExecution('r-done')).toBeNull();
      // The waiting session and its pending request stay, however old.
      expect(await store.getSession('s-wait')).not.toBeNull();
      expect((await store.getApproval('r-wait'))?.status).toBe('pending');
      const audit = await store.listAudit();
      expect(audit.filter((entry) => entry.erasedAt !== undefined).map((entry) => entry.seq)).toEqual([1, 3]);
      expect(verifyAuditChain(audit)).toMatchObject({ ok: true, erased: 2 });
      expect(
        await store.purgeBatch({ before: cutoffs, limit: 100, at: at(41), nowMs: atMs(41), ...audited }),
      ).toEqual({
        sessions: 0,
        runs: 0,
        requests: 0,
        auditEntries: 0,
      });
    });

    it('keeps a decided request while its session still has an open batch', async () => {
      const store = ctx.store();
      await sessionWithRequest(store, 's1', 'ann', 'r1');
      await store.decide('r1', byPerson('approved', 12));
      const purged = await store.purgeBatch({
        before: { requests: at(90), sessions: at(90) },
        limit: 10,
        at: at(95),
        nowMs: atMs(95),
      });
      expect(purged).toEqual({ sessions: 0, runs: 0, requests: 0, auditEntries: 0 });
      expect(await store.getApproval('r1')).not.toBeNull();
    });

    it('takes at most `limit` of a kind per batch', async () => {
      const store = ctx.store();
      await store.appendAudit(
        [event('tamper.ignored', null), event('tamper.ignored', null), event('tamper.ignored', null)],
        at(1),
      );
      const first = await store.purgeBatch({
        before: { audit: at(5) },
        limit: 2,
        at: at(10),
        nowMs: atMs(10),
        ...audited,
      });
      expect(first.auditEntries).toBe(2);
      const second = await store.purgeBatch({
        before: { audit: at(5) },
        limit: 2,
        at: at(10),
        nowMs: atMs(10),
        ...audited,
      });
      expect(second.auditEntries).toBe(1);
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true, erased: 3 });
    });
  });
}
