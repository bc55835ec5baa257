import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { canonicalJson, sha256Hex } from '../../src/core/canonical-json.ts';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineWorkflow } from '../../src/workflow/define-workflow.ts';
import { executor } from '../../src/workflow/executor.ts';
import { requestPort } from '../../src/workflow/request-port.ts';
import { createWorkflowRunner, type WorkflowRunnerOptions } from '../../src/workflow/runner.ts';
import { stateOf } from './helpers.ts';

const approve = { approved: true, note: 'Approved, photo checked.' };
const HOUR = 3_600_000;
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function sqliteStore(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-wf-expiry-'));
  const store = createSqliteStore({ path: join(dir, 'store.db') });
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

/** A runner whose clock the test moves. */
function clocked(checkpoints: CheckpointStore, options: Partial<WorkflowRunnerOptions> = {}) {
  const clock = { ms: Date.parse('2026-03-02T09:00:00.000Z') };
  const runner = createWorkflowRunner({
    workflows: [refundWorkflow, opinionWorkflow],
    checkpoints,
    now: () => new Date(clock.ms),
    ...options,
  });
  const advance = (ms: number) => {
    clock.ms += ms;
  };
  return { runner, clock, advance };
}

/** An executor that asks on a port of its own (10 minute TTL); its onResponse says what came back. */
const secondOpinion = requestPort('second-opinion', {
  request: z.object({ question: z.string() }),
  response: z.object({ ok: z.boolean() }),
  ttl: '10m',
});
const asker = executor({
  id: 'asker',
  input: z.object({
    question: z.string(),
    until: z.string().optional(),
    untilMs: z.number().optional(),
    invalidDate: z.boolean().optional(),
  }),
  output: z.string(),
  ports: [secondOpinion],
  handle: ({ question, until, untilMs, invalidDate }, ctx) => {
    const expiresAt = invalidDate ? new Date(Number.NaN) : untilMs === undefined ? until : new Date(untilMs);
    ctx.request(secondOpinion, { question }, expiresAt === undefined ? {} : { expiresAt });
    return undefined;
  },
  onResponse: (answer, ctx) =>
    answer.expired
      ? `expired: by ${answer.by}, response ${JSON.stringify(answer.response)}, ctx.answered.expired ${ctx.answered?.expired}`
      : `answered: ok ${(answer.response as { ok: boolean }).ok}, expired ${answer.expired}`,
});
const opinionWorkflow = defineWorkflow({ name: 'opinion', version: 1 }).start(asker).output(asker).build();

describe('workflow answers in the audit trail (SQLite: one transaction with the answer)', () => {
  it('a request is audited when raised and its answer once, bound to the canonical answer; the chain verifies', async () => {
    const store = sqliteStore();
    const { runner } = clocked(store);
    const view = await runner.start('refund', 'refund-1040', 1040);
    const request = view.requests[0]!;
    const requested = await store.listAudit();
    const requestJson = canonicalJson(request.data);
    const row = await store.getApproval(request.id);
    // The same family as a tool call's: request.raised, its data naming kind, run and port.
    expect(requested).toEqual([
      expect.objectContaining({
        kind: 'request.raised',
        session: 'wf.refund-1040',
        requestId: request.id,
        actor: 'refund',
        data: {
          kind: 'port',
          run: 'refund-1040',
          workflow: 'refund',
          version: 1,
          port: 'manager-approval',
          args: requestJson,
          argsHash: sha256Hex(requestJson),
          effect: row?.effect ?? null,
          askedBy: null,
          expiresAt: request.expiresAt,
          // What a live card shows, as the row has it.
          createdAt: row?.createdAt,
          raisedBy: null,
          customer: null,
          requiredRole: 'manager',
          // The port reminds the managers after four hours (examples/bookstore/refund-workflow.ts).
          nudges: row?.nudges,
        },
      }),
    ]);
    expect(row?.nudges?.remindAt).toBe(
      new Date(Date.parse(row?.createdAt ?? '') + 4 * 3_600_000).toISOString(),
    );
    // The row holds what was raised, bound to the same hash.
    expect(row).toMatchObject({ kind: 'port', run: 'refund-1040', argsJson: requestJson, status: 'pending' });

    // Keys in another order: the audit holds the canonical text, and its hash.
    const answer = { note: 'Approved, photo checked.', approved: true };
    await runner.respond('refund-1040', request.id, answer, { by: 'mona' });
    const responseJson = '{"approved":true,"note":"Approved, photo checked."}';
    const entries = await store.listAudit();
    expect(entries.map((entry) => entry.kind)).toEqual(['request.raised', 'request.decided']);
    expect(entries[1]).toMatchObject({
      session: 'wf.refund-1040',
      requestId: request.id,
      actor: 'mona',
      data: {
        kind: 'port',
        verdict: 'answered',
        run: 'refund-1040',
        workflow: 'refund',
        port: 'manager-approval',
        response: responseJson,
        responseHash: sha256Hex(responseJson),
      },
    });
    // The entry's time is the answer's.
    expect(entries[1]?.at).toBe((await store.getApproval(request.id))?.decision?.at);

    await expect(runner.respond('refund-1040', request.id, approve, { by: 'max' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    expect(await store.listAudit()).toHaveLength(2);
    expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true, entries: 2 });
    // `audit --session wf.<run>` lists the run's entries and nothing else.
    await runner.start('refund', 'refund-1043', 1043);
    expect((await store.listAudit({ session: 'wf.refund-1040' })).map((entry) => entry.kind)).toEqual([
      'request.raised',
      'request.decided',
    ]);
  });

  it('concurrent answers: one wins and exactly one request.decided is written, naming the winner', async () => {
    const store = sqliteStore();
    const { runner } = clocked(store);
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd', 'e'].map((by) =>
        runner.respond('r', request.id, { ...approve, note: by }, { by }),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const answered = (await store.listAudit()).filter((entry) => entry.kind === 'request.decided');
    expect(answered).toHaveLength(1);
    expect(answered[0]?.actor).toBe((await store.getApproval(request.id))?.decision?.by);
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  });

  it('an answer that fails the port schema writes nothing, not even an audit entry', async () => {
    const store = sqliteStore();
    const { runner } = clocked(store);
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    await expect(runner.respond('r', request.id, { approved: 'yes' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect((await store.listAudit()).map((entry) => entry.kind)).toEqual(['request.raised']);
  });
});

describe('a checkpoint store without an audit trail (memory, files)', () => {
  it('the runner appends the entries to the trail it was given, after the write; without one, none are written', async () => {
    const trail = createMemoryStore();
    const { runner } = clocked(createMemoryCheckpointStore(), { audit: trail });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    await runner.respond('r', request.id, approve, { by: 'mona' });
    await expect(runner.respond('r', request.id, approve, { by: 'max' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    const entries = await trail.listAudit();
    expect(entries.map((entry) => [entry.kind, entry.actor])).toEqual([
      ['request.raised', 'refund'],
      ['request.decided', 'mona'],
    ]);
    expect(verifyAuditChain(entries).ok).toBe(true);

    const bare = createMemoryCheckpointStore();
    const alone = clocked(bare).runner;
    const second = (await alone.start('refund', 'r', 1040)).requests[0]!;
    expect((await alone.respond('r', second.id, approve, { by: 'mona' })).status).toBe('completed');
    expect(await trail.listAudit()).toHaveLength(2);
  });

  it('the crash window, as documented: an append that fails after the answer leaves the answer recorded', async () => {
    const trail = createMemoryStore();
    const failing: Pick<Store, 'appendAudit'> = {
      appendAudit: async (events, at) => {
        if (events.some((event) => event.kind === 'request.decided')) throw new Error('trail is down');
        await trail.appendAudit(events, at);
      },
    };
    const checkpoints = createMemoryCheckpointStore();
    const { runner } = clocked(checkpoints, { audit: failing });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    await expect(runner.respond('r', request.id, approve, { by: 'mona' })).rejects.toThrow('trail is down');
    expect((await checkpoints.getApproval(request.id))?.decision).toMatchObject({ by: 'mona' });
    expect((await trail.listAudit()).map((entry) => entry.kind)).toEqual(['request.raised']);
    // The answer stands and the run continues with it on its next resume.
    expect((await runner.resume('r')).status).toBe('completed');
  });
});

describe('requests expire', () => {
  it('each request records its expiresAt: the runner requestTtl, a port ttl, or ctx.request expiresAt', async () => {
    const { runner, clock } = clocked(createMemoryCheckpointStore(), { requestTtl: '2h' });
    const refund = (await runner.start('refund', 'r', 1040)).requests[0]!;
    expect(refund.expiresAt).toBe(new Date(clock.ms + 2 * HOUR).toISOString());
    const own = (await runner.start('opinion', 'o', { question: 'q' })).requests[0]!;
    expect(own.expiresAt).toBe(new Date(clock.ms + 10 * 60_000).toISOString());
    const until = '2026-03-05T00:00:00.000Z';
    const given = (await runner.start('opinion', 'o2', { question: 'q', until })).requests[0]!;
    expect(given.expiresAt).toBe(until);
    // A parameter with an offset is taken as the instant it names, stored in UTC: as given,
    // it would sort as text after a UTC expiry two hours later.
    const offset = (
      await runner.start('opinion', 'o3', { question: 'q', until: '2026-03-05T02:00:00+02:00' })
    ).requests[0]!;
    expect(offset.expiresAt).toBe(until);
    // A Date, the other way JavaScript holds an instant: stored in the same UTC form.
    const date = (await runner.start('opinion', 'o4', { question: 'q', untilMs: Date.parse(until) }))
      .requests[0]!;
    expect(date.expiresAt).toBe(until);
    // An invalid Date is refused with its own words (the step fails), not stored.
    expect(await runner.start('opinion', 'o5', { question: 'q', invalidDate: true })).toMatchObject({
      status: 'failed',
      error: { message: expect.stringMatching(/expiresAt is an invalid Date/) },
    });
    expect(() => requestPort('p', { request: z.string(), response: z.string(), ttl: 'soon' })).toThrow(
      /ttl of port p "soon" is not a duration/,
    );
  });

  it('an expiry past the year 9999 is refused, from ctx.request or a ttl: as +010000-… text it would sort before every date and expire at once', async () => {
    const { runner } = clocked(createMemoryCheckpointStore());
    const given = await runner.start('opinion', 'o', { question: 'q', until: '+010000-01-01T00:00:00.000Z' });
    expect(given).toMatchObject({
      status: 'failed',
      requests: [],
      error: {
        code: 'INVALID_INPUT',
        executor: 'asker',
        message: expect.stringContaining(
          'expiresAt "+010000-01-01T00:00:00.000Z" falls outside the years 0000 to 9999',
        ),
      },
    });
    // The last instant a stored time can name is still taken.
    const last = await runner.start('opinion', 'o2', { question: 'q', until: '9999-12-31T23:59:59.999Z' });
    expect(last.requests).toMatchObject([{ expiresAt: '9999-12-31T23:59:59.999Z' }]);
    // A ttl past the year 9999 from the runner's clock is refused when the runner is created
    // (test/definition-ttl.test.ts); one that fits then can still pass it from a later clock.
    const far = clocked(createMemoryCheckpointStore(), { requestTtl: '7000y' });
    far.advance(1000 * 365 * 86_400_000);
    expect(await far.runner.start('refund', 'r', 1040)).toMatchObject({
      status: 'failed',
      requests: [],
      error: {
        code: 'INVALID_INPUT',
        message: expect.stringContaining('falls outside the years 0000 to 9999'),
      },
    });
  });

  it('an answer after expiresAt is EXPIRED and records nothing: no answer, no audit entry, no checkpoint', async () => {
    const store = sqliteStore();
    const { runner, advance } = clocked(store, { requestTtl: '1h' });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    const history = await runner.history('r');
    advance(HOUR);
    const late = runner.respond('r', request.id, approve, { by: 'mona' });
    await expect(late).rejects.toMatchObject({ code: 'EXPIRED' });
    await expect(runner.respond('r', request.id, approve)).rejects.toThrow(
      `Request ${request.id} of run r expired at ${request.expiresAt}`,
    );
    expect((await store.getApproval(request.id))?.status).toBe('pending');
    expect((await store.listAudit()).map((entry) => entry.kind)).toEqual(['request.raised']);
    expect(await runner.history('r')).toEqual(history);
    expect(await store.getState('bookstore', 'refund:1040')).toBeUndefined();
  });

  it('one millisecond before expiresAt an answer still counts', async () => {
    const { runner, advance } = clocked(createMemoryCheckpointStore(), { requestTtl: '1h' });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    advance(HOUR - 1);
    expect((await runner.respond('r', request.id, approve, { by: 'mona' })).status).toBe('completed');
  });

  it('resume expires an overdue request reached along an edge: audited, nothing sent on, the run ends expired', async () => {
    const store = sqliteStore();
    const { runner, advance } = clocked(store, { requestTtl: '1h' });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    advance(HOUR + 5);
    const view = await runner.resume('r');
    expect(view).toMatchObject({
      status: 'expired',
      requests: [],
      outputs: [],
      expired: [{ requestId: request.id, port: 'manager-approval', expiresAt: request.expiresAt }],
    });
    // execute never ran: nothing refunded.
    expect(await store.getState('bookstore', 'refund:1040')).toBeUndefined();
    expect(await store.getApproval(request.id)).toMatchObject({
      status: 'expired',
      decision: { by: 'countersign', kind: 'expiry' },
    });
    expect((await runner.runs()).find((run) => run.run === 'r')?.status).toBe('expired');
    const entries = await store.listAudit({ session: 'wf.r' });
    expect(entries.map((entry) => entry.kind)).toEqual(['request.raised', 'request.expired']);
    expect(entries[1]).toMatchObject({
      requestId: request.id,
      actor: 'countersign',
      data: {
        kind: 'port',
        run: 'r',
        workflow: 'refund',
        port: 'manager-approval',
        expiresAt: request.expiresAt,
      },
    });
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    // Too late for anyone now, and nothing more is recorded.
    await expect(runner.respond('r', request.id, approve, { by: 'mona' })).rejects.toMatchObject({
      code: 'EXPIRED',
    });
    expect(await store.listAudit()).toHaveLength(2);
    // Resuming again changes nothing.
    const history = await runner.history('r');
    expect(await runner.resume('r')).toMatchObject({ status: 'expired' });
    expect(await runner.history('r')).toEqual(history);
  });

  it('an answer recorded before the expiry stands: resuming later applies it, not an expiry', async () => {
    const store = sqliteStore();
    const { runner, advance, clock } = clocked(store, { requestTtl: '1h' });
    const request = (await runner.start('refund', 'r', 1040)).requests[0]!;
    // A process recorded the answer in time and died before continuing the run.
    const then = new Date(clock.ms).toISOString();
    const recorded = await store.decide(request.id, {
      verdict: 'answered',
      response: approve,
      by: 'mona',
      reason: null,
      at: then,
      kind: 'person',
    });
    expect(recorded.won).toBe(true);
    advance(2 * HOUR);
    expect(await runner.expire()).toEqual([]);
    const view = await runner.resume('r');
    expect(view).toMatchObject({ status: 'completed', outputs: [expect.stringMatching(/^Refund issued/)] });
    expect((await store.listAudit()).map((entry) => entry.kind)).toEqual(['request.raised']);
  });

  it('expire() records every overdue request once, continues no run, and the next resume applies it', async () => {
    const store = sqliteStore();
    const { runner, advance } = clocked(store, { requestTtl: '1h' });
    const first = (await runner.start('refund', 'a', 1040)).requests[0]!;
    advance(30 * 60_000);
    await runner.start('refund', 'b', 1043);
    advance(31 * 60_000);
    // Only a's request is past its expiry.
    const expired = await runner.expire();
    expect(expired).toEqual([
      {
        run: 'a',
        workflow: 'refund',
        requestId: first.id,
        port: 'manager-approval',
        expiresAt: first.expiresAt,
      },
    ]);
    expect(await runner.expire()).toEqual([]);
    expect((await runner.runs()).map((run) => [run.run, run.status])).toEqual([
      ['a', 'awaiting_input'],
      ['b', 'awaiting_input'],
    ]);
    expect((await store.listAudit()).filter((entry) => entry.kind === 'request.expired')).toHaveLength(1);
    expect(await runner.resume('a')).toMatchObject({ status: 'expired' });
    expect(await runner.resume('b')).toMatchObject({ status: 'awaiting_input' });
  });

  it('an expired request asked with ctx.request comes back to onResponse: expired, by countersign, response null', async () => {
    const trail = createMemoryStore();
    const checkpoints = createMemoryCheckpointStore();
    const { runner, advance } = clocked(checkpoints, { audit: trail });
    const request = (await runner.start('opinion', 'o', { question: 'Is it damaged?' })).requests[0]!;
    advance(10 * 60_000);
    const view = await runner.resume('o');
    expect(view).toMatchObject({
      status: 'completed',
      outputs: ['expired: by countersign, response null, ctx.answered.expired true'],
    });
    // The executor handled it: no branch ended unanswered.
    expect(view.expired).toBeUndefined();
    expect((await stateOf(checkpoints, 'o')).expired).toEqual([]);
    expect((await trail.listAudit()).map((entry) => [entry.kind, entry.requestId])).toEqual([
      ['request.raised', request.id],
      ['request.expired', request.id],
    ]);

    const answered = (await runner.start('opinion', 'o2', { question: 'q' })).requests[0]!;
    expect((await runner.respond('o2', answered.id, { ok: true })).outputs).toEqual([
      'answered: ok true, expired false',
    ]);
  });
});
