import { expect } from 'vitest';
import { AUDIT_GENESIS, verifyAuditChain } from '../../core/audit.ts';
import { auditGaps, indexAudit } from '../../core/audit-coverage.ts';
import type { Store } from '../store.ts';
import { at, byPerson, type ConformanceContext, event, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';
import { storedEvent } from './stored-event.ts';

export function auditCases(ctx: ConformanceContext): void {
  describe('audit trail', () => {
    it('assigns seq from 1 and links every entry to the one before', async () => {
      const store = ctx.store();
      await store.appendAudit(
        [event('request.raised', 's1', 'r1'), event('request.decided', 's1', 'r1')],
        at(1),
      );
      await store.appendAudit([event('tamper.ignored', null)], at(2));
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.seq)).toEqual([1, 2, 3]);
      expect(entries[0]?.prevHash).toBe(AUDIT_GENESIS);
      expect(entries[1]?.prevHash).toBe(entries[0]?.hash);
      expect(entries[2]?.prevHash).toBe(entries[1]?.hash);
      expect(entries[2]).toMatchObject({ at: at(2), kind: 'tamper.ignored', session: null, requestId: null });
      expect(entries[0]?.data).toEqual({ note: 'request.raised for s1' });
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 3 });
    });

    it('appending nothing adds nothing', async () => {
      await ctx.store().appendAudit([], at(1));
      expect(await ctx.store().listAudit()).toEqual([]);
    });

    it('filters by session in seq order', async () => {
      const store = ctx.store();
      await store.appendAudit([event('request.raised', 's1'), event('request.raised', 's2')], at(1));
      await store.appendAudit([event('request.decided', 's1')], at(2));
      const s1 = await store.listAudit({ session: 's1' });
      expect(s1.map((entry) => [entry.seq, entry.kind])).toEqual([
        [1, 'request.raised'],
        [3, 'request.decided'],
      ]);
    });

    it('one chain runs through every kind of write and verifies', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [],
        approvals: [request({ id: 'r1', session: 's1' })],
        audit: [event('request.raised', 's1', 'r1')],
        at: at(10),
      });
      await store.decide('r1', byPerson('approved', 11), [event('request.decided', 's1', 'r1')]);
      await store.startExecution(
        {
          requestId: 'r1',
          session: 's1',
          callId: 'call-r1',
          tool: 'place_order',
          args: {},
          idempotencyKey: 'k',
          at: at(12),
        },
        [event('execution.started', 's1', 'r1')],
      );
      await store.finishExecution('r1', {
        status: 'succeeded',
        result: 'done',
        at: at(13),
        audit: [event('execution.finished', 's1', 'r1')],
      });
      await raise(store, 's1', [request({ id: 'r2', session: 's1' })]);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const copy = structuredClone(snapshot);
      copy.session.id = 's2';
      copy.approvals = [];
      copy.executions = [];
      await store.importSession(copy, [event('session.imported', 's2')]);
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.kind)).toEqual([
        'request.raised',
        'request.decided',
        'execution.started',
        'execution.finished',
        'session.imported',
      ]);
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 5 });
    });

    it('text that is not well-formed UTF-16 is stored as UTF-8 reads it back, and the chain verifies', async () => {
      // JSON.parse accepts a lone surrogate ("\\ud800"), in a request body or a tool call;
      // UTF-8 has no encoding for one, so every backend stores U+FFFD in its place, and the
      // link covers that. Data keeps its JSON escapes, and so the surrogate. An encrypted
      // store seals it under the session's data key, whose owner is stored the same way.
      const store = ctx.store();
      const odd = storedEvent({
        kind: 'request.decided',
        session: 's\ud800',
        requestId: 'r\udfff',
        actor: 'a\ud800b',
        data: { note: 'x\udfffy' },
      });
      const pair = storedEvent({
        kind: 'request.raised',
        session: 's\ud83d\ude00',
        requestId: null,
        actor: 'x',
        data: {},
      });
      await store.appendAudit([odd, pair], at(1));
      const entries = await store.listAudit();
      expect(entries.map((entry) => [entry.session, entry.requestId, entry.actor])).toEqual([
        ['s\ufffd', 'r\ufffd', 'a\ufffdb'],
        ['s😀', null, 'x'],
      ]);
      expect(entries[0]?.data).toEqual({ note: 'x\udfffy' });
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 2 });
      // Found by the session as the caller names it, and as it is stored.
      expect((await store.listAudit({ session: 's\ud800' })).map((entry) => entry.seq)).toEqual([1]);
      expect((await store.listAudit({ session: 's\ufffd' })).map((entry) => entry.seq)).toEqual([1]);
    });

    it('odd text in every column round-trips, and the chain verifies', async () => {
      // PostgreSQL links a batch from one JSON parameter (json-parameter.ts): escaping must keep
      // each text whole.
      const texts = [
        'back\\slash',
        'quote"d',
        '{"json":"looking"}',
        '[1,2]',
        'null',
        '\\u0041',
        'é€😀𝄞',
        '\u2028\u2029',
        'tab\tnew\nline\r',
        '\u007f\u0001',
        '\ufeffbom',
        '',
      ];
      const store = ctx.store();
      const events = texts.map((text, i) =>
        storedEvent({
          kind: 'request.decided',
          session: `s${text}`,
          requestId: i % 2 === 0 ? `r${text}` : null,
          actor: text,
          data: { note: text, nul: 'a\u0000b', lone: 'x\ud800y', nested: { text } },
        }),
      );
      await store.appendAudit(events, at(1));
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.actor)).toEqual(texts);
      expect(entries.map((entry) => entry.session)).toEqual(texts.map((text) => `s${text}`));
      expect(entries[0]?.data).toEqual({
        note: texts[0],
        nul: 'a\u0000b',
        lone: 'x\ud800y',
        nested: { text: texts[0] },
      });
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: texts.length });
    });

    it('a batch of 200 events, one of them 1 MB, is linked in order and verifies', async () => {
      const store = ctx.store();
      const big = `${'x'.repeat(1 << 20)}😀\\"`;
      const events = Array.from({ length: 200 }, (_, i) =>
        storedEvent({
          kind: 'request.raised',
          session: `s${i % 7}`,
          requestId: `r${i}`,
          actor: `a${i}`,
          data: { i, big: i === 100 ? big : '' },
        }),
      );
      await store.appendAudit(events.slice(0, 1), at(1));
      await store.appendAudit(events.slice(1), at(2));
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      expect(entries.map((entry) => entry.requestId)).toEqual(events.map((event) => event.requestId));
      expect(entries[100]?.data).toEqual({ i: 100, big });
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 200 });
    });

    it('a NUL in an actor is stored or refused with INVALID_INPUT, and the chain still verifies', async () => {
      // SQLite and the memory store keep it; PostgreSQL text cannot hold one.
      const store = ctx.store();
      const one = (actor: string) =>
        storedEvent({ kind: 'request.raised', session: 's', requestId: null, actor, data: {} });
      await store.appendAudit([one('ok')], at(1));
      const outcome = await store.appendAudit([one('a\u0000b')], at(2)).then(
        () => 'stored',
        (error: { code?: string }) => error.code ?? `untyped: ${String(error)}`,
      );
      expect(['stored', 'INVALID_INPUT']).toContain(outcome);
      await store.appendAudit([one('after')], at(3));
      expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    });

    it('refuses malformed events or a time in another form, naming the field, appending nothing', async () => {
      const store = ctx.store();
      let deep: unknown = {};
      for (let i = 0; i < 70; i++) deep = { deeper: deep };
      const good = event('request.raised', 's1', 'r1');
      for (const [events, time, field] of [
        [[{ ...good, kind: 'request.stolen' }], at(1), '[0].kind'],
        [[good, { ...good, session: 7 }], at(1), '[1].session'],
        [[{ ...good, data: null }], at(1), '[0].data'],
        [[{ ...good, data: deep }], at(1), '[0].data'],
        ['request.raised', at(1), 'the whole value'],
        [[good], at(1).replace('.000Z', 'Z'), 'not in UTC'],
      ] as const) {
        const refused = await store.appendAudit(events as never, time).then(
          () => null,
          (error: { code?: string; message?: string }) => error,
        );
        expect(refused?.code, field).toBe('INVALID_INPUT');
        expect(refused?.message, field).toContain(field);
      }
      expect(await store.listAudit()).toEqual([]);
    });

    it('a forged entry does not verify', async () => {
      const store = ctx.store();
      await store.appendAudit([event('request.raised', 's1'), event('request.decided', 's1')], at(1));
      const entries = await store.listAudit();
      const forged = entries.map((entry) => (entry.seq === 1 ? { ...entry, actor: 'mallory' } : entry));
      expect(verifyAuditChain(forged)).toMatchObject({ ok: false, brokenAt: 1 });
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true });
    });

    it('every request and ledger row is matched by its audit entries; rows without them are named', async () => {
      const store = ctx.store();
      const gaps = async (target: Store) =>
        auditGaps(
          indexAudit(await target.listAudit()),
          await target.listApprovals(),
          await target.listExecutions(),
        );
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1' }), request({ id: 'r2', session: 's1' })]);
      await store.appendAudit([event('request.raised', 's1', 'r1')], at(11));
      await store.decide('r1', byPerson('approved', 12), [event('request.decided', 's1', 'r1')]);
      const start = { session: 's1', tool: 'place_order', args: {}, at: at(13) };
      await store.startExecution(
        { ...start, requestId: 'r1', callId: 'call-r1', idempotencyKey: 'countersign:r1' },
        [event('execution.started', 's1', 'r1')],
      );
      await store.finishExecution('r1', {
        status: 'succeeded',
        result: 'ok',
        at: at(14),
        audit: [event('execution.finished', 's1', 'r1')],
      });
      // r2 reaches the same state with every audit entry missing, as after a truncation.
      await store.decide('r2', byPerson('approved', 12));
      await store.startExecution({
        ...start,
        requestId: 'r2',
        callId: 'call-r2',
        idempotencyKey: 'countersign:r2',
      });
      await store.finishExecution('r2', { status: 'failed', result: 'no', at: at(14) });
      expect(await gaps(store)).toEqual([
        { missing: 'request.raised', count: 1, first: ['r2'] },
        { missing: 'request.decided', count: 1, first: ['r2'] },
        { missing: 'execution.started', count: 1, first: ['r2'] },
        { missing: 'execution.finished', count: 1, first: ['r2'] },
      ]);
      await store.appendAudit(
        ['request.raised', 'request.decided', 'execution.started', 'execution.finished'].map((kind) =>
          event(kind as Parameters<typeof event>[0], 's1', 'r2'),
        ),
        at(15),
      );
      expect(await gaps(store)).toEqual([]);
    });
  });

  describe('audit log cursor', () => {
    /** Five entries in three writes: s1, s2, s1 | s2 | s1. */
    async function five(store: Store): Promise<void> {
      await store.appendAudit(
        [event('request.raised', 's1'), event('request.raised', 's2'), event('request.decided', 's1')],
        at(1),
      );
      await store.appendAudit([event('request.decided', 's2')], at(2));
      await store.appendAudit([event('execution.started', 's1')], at(3));
    }
    const seqs = (entries: readonly { seq: number }[]) => entries.map((entry) => entry.seq);

    it('afterSeq is exclusive, limit caps the page, entries come in ascending seq', async () => {
      const store = ctx.store();
      await five(store);
      expect(seqs(await store.listAudit({ afterSeq: 0 }))).toEqual([1, 2, 3, 4, 5]);
      expect(seqs(await store.listAudit({ afterSeq: 2 }))).toEqual([3, 4, 5]);
      expect(seqs(await store.listAudit({ afterSeq: 2, limit: 2 }))).toEqual([3, 4]);
      expect(seqs(await store.listAudit({ limit: 1 }))).toEqual([1]);
      expect(await store.listAudit({ afterSeq: 5 })).toEqual([]);
      expect(await store.listAudit({ afterSeq: 99, limit: 10 })).toEqual([]);
      // A page is the same entries as the whole read, hashes and all.
      const all = await store.listAudit();
      expect(await store.listAudit({ afterSeq: 3, limit: 1 })).toEqual([all[3]]);
    });

    it('a follower paging by cursor reads every entry exactly once, in order', async () => {
      const store = ctx.store();
      await five(store);
      const read: number[] = [];
      let cursor = 0;
      for (;;) {
        const page = await store.listAudit({ afterSeq: cursor, limit: 2 });
        if (page.length === 0) break;
        read.push(...seqs(page));
        cursor = page.at(-1)!.seq;
      }
      expect(read).toEqual([1, 2, 3, 4, 5]);
    });

    it('with a session, the cursor and the limit apply to that session’s entries', async () => {
      const store = ctx.store();
      await five(store);
      expect(seqs(await store.listAudit({ session: 's1' }))).toEqual([1, 3, 5]);
      expect(seqs(await store.listAudit({ session: 's1', afterSeq: 1 }))).toEqual([3, 5]);
      expect(seqs(await store.listAudit({ session: 's1', afterSeq: 1, limit: 1 }))).toEqual([3]);
      expect(seqs(await store.listAudit({ session: 's2', afterSeq: 2 }))).toEqual([4]);
    });

    it('lastAuditSeq is the newest seq, 0 when the log is empty', async () => {
      const store = ctx.store();
      expect(await store.lastAuditSeq()).toBe(0);
      await five(store);
      expect(await store.lastAuditSeq()).toBe(5);
    });

    it('entries appended through a sibling connection are visible to the cursor', async () => {
      const store = ctx.store();
      const sibling = await ctx.sibling();
      await store.appendAudit([event('request.raised', 's1')], at(1));
      const cursor = (await store.listAudit({ afterSeq: 0 })).at(-1)!.seq;
      await sibling.appendAudit([event('request.decided', 's1'), event('execution.started', 's1')], at(2));
      const page = await store.listAudit({ afterSeq: cursor });
      expect(page.map((entry) => [entry.seq, entry.kind])).toEqual([
        [2, 'request.decided'],
        [3, 'execution.started'],
      ]);
      expect(page[0]?.prevHash).toBe((await store.listAudit({ limit: 1 }))[0]?.hash);
      expect(await store.lastAuditSeq()).toBe(3);
    });

    it('refuses a cursor that is not a whole number, or a limit below 1', async () => {
      const store = ctx.store();
      for (const query of [{ afterSeq: -1 }, { afterSeq: 1.5 }, { limit: 0 }, { limit: 2.5 }])
        await expect(store.listAudit(query), JSON.stringify(query)).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
    });
  });
}
