import { describe, expect, it } from 'vitest';
import { byPerson, leasedSession, raise, request } from '../../src/store/conformance/fixtures.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { runCli, tempStore } from '../helpers/cli.ts';

/** `pending` and `history` print one page and say how to get the next; nothing loads every row. */
describe('countersign pending / history page with --limit and --after', () => {
  async function seeded() {
    const url = tempStore();
    const store = createSqliteStore({ path: url.slice('sqlite:'.length) });
    await leasedSession(store, 's1');
    // Created now-ish, expiring far ahead, so they are waiting whatever the clock says.
    const base = Date.now();
    const iso = (offset: number) => new Date(base + offset).toISOString();
    await raise(
      store,
      's1',
      Array.from({ length: 5 }, (_, index) =>
        request({
          id: `apr_${index}`,
          session: 's1',
          createdAt: iso(index),
          expiresAt: iso(86_400_000),
          customer: index === 2 ? 'Carol' : 'c-100',
        }),
      ),
    );
    await store.decide('apr_4', { ...byPerson('rejected', 0), at: iso(10) });
    await store.close();
    return { COUNTERSIGN_STORE: url };
  }

  it('prints a page, then the command for the next, until the last page', async () => {
    const env = await seeded();
    const first = await runCli(['pending', '--limit', '2'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('apr_0');
    expect(first.stdout).toContain('apr_1');
    expect(first.stdout).not.toContain('apr_2');
    const more = /More: countersign pending --limit 2 --after (\S+)/.exec(first.stdout);
    expect(more).not.toBeNull();
    const second = await runCli(['pending', '--limit', '2', '--after', more?.[1] ?? ''], env);
    expect(second.stdout).toContain('apr_2');
    expect(second.stdout).toContain('apr_3');
    expect(second.stdout).not.toMatch(/More:/);
  });

  it("the next page's command repeats the filters the cursor is bound to; other filters are INVALID_CURSOR", async () => {
    const env = await seeded();
    const first = await runCli(['pending', '--customer', 'C-1', '--limit', '1'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('apr_0');
    const more = /More: countersign (pending --customer C-1 --limit 1 --after \S+)$/.exec(
      first.stdout.trim(),
    );
    expect(more, first.stdout).not.toBeNull();
    // Run as printed: the same filters, the next match (apr_2, Carol, is not one).
    const second = await runCli((more?.[1] ?? '').split(' '), env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('apr_1');
    expect(second.stdout).not.toContain('apr_0');
    expect(second.stdout).not.toContain('apr_2');
    // The cursor under other filters (here: none) is refused, saying what to do.
    const cursor = /--after (\S+)$/.exec(more?.[1] ?? '')?.[1] ?? '';
    const other = await runCli(['pending', '--after', cursor, '--json'], env);
    expect(other.code).not.toBe(0);
    expect((other.json as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'INVALID_CURSOR',
      message: expect.stringMatching(/other filters.*start again from the first page without a cursor/i),
    });
  });

  it('with --json, stdout stays the array and the cursor goes to stderr', async () => {
    const env = await seeded();
    const run = await runCli(['pending', '--limit', '3', '--json'], env);
    expect((run.json as Array<{ id: string }>).map((view) => view.id)).toEqual(['apr_0', 'apr_1', 'apr_2']);
    const { next } = JSON.parse(run.stderr) as { next: string };
    const rest = await runCli(['pending', '--limit', '3', '--json', '--after', next], env);
    expect((rest.json as Array<{ id: string }>).map((view) => view.id)).toEqual(['apr_3']);
    expect(rest.stderr).toBe('');
    const carol = await runCli(['pending', '--customer', 'CAROL', '--json'], env);
    expect((carol.json as Array<{ id: string }>).map((view) => view.id)).toEqual(['apr_2']);
  });

  it('executions pages the ledger the same way', async () => {
    const env = await seeded();
    const store = createSqliteStore({ path: env.COUNTERSIGN_STORE.slice('sqlite:'.length) });
    for (const [index, id] of ['apr_0', 'apr_1'].entries())
      await store.startExecution({
        requestId: id,
        session: 's1',
        callId: `call-${id}`,
        tool: 'place_order',
        args: {},
        idempotencyKey: `countersign:${id}`,
        at: new Date(Date.now() + index).toISOString(),
      });
    await store.close();
    const first = await runCli(['executions', '--limit', '1', '--json'], env);
    expect((first.json as Array<{ requestId: string }>).map((row) => row.requestId)).toEqual(['apr_0']);
    const { next } = JSON.parse(first.stderr) as { next: string };
    const rest = await runCli(['executions', '--limit', '1', '--json', '--after', next], env);
    expect((rest.json as Array<{ requestId: string }>).map((row) => row.requestId)).toEqual(['apr_1']);
    expect(rest.stderr).toBe('');
    // Bound to its filters: printed with them for people, refused under others.
    const mine = await runCli(['executions', '--session', 's1', '--limit', '1'], env);
    expect(mine.stdout.trim()).toMatch(/More: countersign executions --session s1 --limit 1 --after \S+$/);
    const other = await runCli(['executions', '--status', 'succeeded', '--json', '--after', next], env);
    expect((other.json as { error: { code: string } }).error.code).toBe('INVALID_CURSOR');
  });

  it('history lists decided requests; a bad cursor or limit is a typed error', async () => {
    const env = await seeded();
    const history = await runCli(['history', '--json'], env);
    expect(
      (history.json as Array<{ id: string; status: string }>).map((view) => [view.id, view.status]),
    ).toEqual([['apr_4', 'rejected']]);
    const bad = await runCli(['pending', '--after', 'garbage!', '--json'], env);
    expect(bad.code).not.toBe(0);
    expect((bad.json as { error: { code: string } }).error.code).toBe('INVALID_CURSOR');
    const limit = await runCli(['history', '--limit', '0', '--json'], env);
    expect((limit.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });
});
