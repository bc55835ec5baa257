import { describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { at, atMs, request, user } from '../../src/store/conformance/fixtures.ts';
import { storedEvent } from '../../src/store/conformance/stored-event.ts';
import { everyBackend } from '../helpers/every-backend.ts';
import { postgresForTests } from '../helpers/postgres.ts';

const url = await postgresForTests();
const backends = everyBackend('attack_erase', url);

/*
 * 4c60314 makes the memory store keep an audit entry's session, request id and actor as a
 * database stores them (storedText: a lone surrogate becomes U+FFFD). Its sessions and
 * requests keep their ids as given, though, and everything that matches audit entries to
 * them compares the two forms: the library API takes any string as a session id (the HTTP
 * layer validates its own), and SQLite and PostgreSQL bind every one as UTF-8 alike.
 */
for (const [name, make] of Object.entries(backends)) {
  describe.skipIf(url === null && name === 'postgres')(
    `audit entries of a session id with a lone surrogate: ${name}`,
    () => {
      it('listAudit filtered by the session as the caller names it finds its entries', async () => {
        const store = await make();
        try {
          await store.appendAudit(
            [
              storedEvent({
                kind: 'request.raised',
                session: 's\ud800',
                requestId: 'r\udfff',
                actor: 'a',
                data: {},
              }),
            ],
            at(1),
          );
          expect((await store.listAudit({ session: 's\ud800' })).map((e) => e.seq)).toEqual([1]);
          expect((await store.listAudit({ session: 's\ufffd' })).map((e) => e.seq)).toEqual([1]);
        } finally {
          await store.close();
        }
      });

      it("erasing the session's principal erases its audit data", async () => {
        const store = await make();
        try {
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
        } finally {
          await store.close();
        }
      });
    },
  );
}
