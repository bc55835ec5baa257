import { describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { at } from '../../src/store/conformance/fixtures.ts';
import { storedEvent } from '../../src/store/conformance/stored-event.ts';
import { everyBackend } from '../helpers/every-backend.ts';
import { postgresForTests } from '../helpers/postgres.ts';

const url = await postgresForTests();
const backends = everyBackend('attack', url, { encrypted: true });

const odd = [
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

for (const [name, make] of Object.entries(backends)) {
  describe.skipIf(url === null && name.startsWith('postgres'))(`audit link over odd text: ${name}`, () => {
    it('odd actors, sessions and request ids round-trip and the chain verifies', async () => {
      const store = await make();
      try {
        const events = odd.map((text, i) =>
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
        expect(entries.map((e) => e.actor)).toEqual(odd);
        expect(entries.map((e) => e.session)).toEqual(odd.map((t) => `s${t}`));
        expect(entries[0]?.data).toEqual({
          note: odd[0],
          nul: 'a\u0000b',
          lone: 'x\ud800y',
          nested: { text: odd[0] },
        });
        expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: odd.length });
      } finally {
        await store.close();
      }
    });

    it('a batch of 200 events, one of them 1 MB, links in one statement and verifies', async () => {
      const store = await make();
      try {
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
        expect(entries).toHaveLength(200);
        expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
        expect(entries.map((e) => e.requestId)).toEqual(events.map((e) => e.requestId));
        expect(entries[100]?.data).toEqual({ i: 100, big });
        expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 200 });
      } finally {
        await store.close();
      }
    });

    // Encrypted too: the session's data key is created for owner "session:s\ud800" and comes
    // back as "session:s\ufffd"; the keyring keys its owners in that form (KeyNotReady before).
    it('lone surrogates in session and request id: stored as U+FFFD, chain verifies', async () => {
      const store = await make();
      try {
        await store.appendAudit(
          [
            storedEvent({
              kind: 'request.raised',
              session: 's\ud800',
              requestId: 'r\udfff',
              actor: '\udc00',
              data: {},
            }),
            storedEvent({
              kind: 'request.raised',
              session: 's\ud83d\ude00',
              requestId: null,
              actor: 'x',
              data: {},
            }),
          ],
          at(1),
        );
        const entries = await store.listAudit();
        expect(entries.map((e) => [e.session, e.requestId, e.actor])).toEqual([
          ['s\ufffd', 'r\ufffd', '\ufffd'],
          ['s😀', null, 'x'],
        ]);
        expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 2 });
      } finally {
        await store.close();
      }
    });

    it('a NUL in an actor fails typed and leaves the chain as it was', async () => {
      const store = await make();
      try {
        await store.appendAudit(
          [storedEvent({ kind: 'request.raised', session: 's', requestId: null, actor: 'ok', data: {} })],
          at(1),
        );
        const outcome = await store
          .appendAudit(
            [
              storedEvent({
                kind: 'request.raised',
                session: 's',
                requestId: null,
                actor: 'a\u0000b',
                data: {},
              }),
            ],
            at(2),
          )
          .then(
            () => 'stored',
            (error: unknown) => (CountersignError.is(error) ? error.code : `untyped: ${String(error)}`),
          );
        if (name.startsWith('postgres')) expect(outcome).toBe('INVALID_INPUT');
        await store.appendAudit(
          [storedEvent({ kind: 'request.raised', session: 's', requestId: null, actor: 'after', data: {} })],
          at(3),
        );
        const entries = await store.listAudit();
        expect(verifyAuditChain(entries).ok).toBe(true);
      } finally {
        await store.close();
      }
    });
  });
}
