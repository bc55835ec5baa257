import { describe, expect, it } from 'vitest';
import { checkpoint } from '../../src/store/conformance/checkpoint-store-conformance.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { runCli, tempStore } from '../helpers/cli.ts';

/** `countersign runs` prints one page of runs, newest first, and the command for the next. */
describe('countersign runs pages with filters, --limit and --after', () => {
  async function seeded() {
    const url = tempStore();
    const store = createSqliteStore({ path: url.slice('sqlite:'.length) });
    const runs = [
      ['r-0', 'c-100', 'refund', 'completed'],
      ['r-1', 'c-200', 'refund', 'awaiting_input'],
      ['r-2', 'c-100', 'exchange', 'awaiting_input'],
      ['r-3', null, 'refund', 'awaiting_input'],
      ['r-4', 'c-100', 'refund', 'awaiting_input'],
    ] as const;
    for (const [index, [run, customer, workflow, status]] of runs.entries()) {
      const first = checkpoint(run, 0, {
        createdAt: new Date(Date.UTC(2030, 0, 1, 0, 0, index)).toISOString(),
        customer,
        workflow,
        status,
      });
      if (!(await store.saveCheckpoint(first, null)).saved) throw new Error(`could not seed ${run}`);
    }
    await store.close();
    return { COUNTERSIGN_STORE: url };
  }

  it('prints a page newest first, then the command for the next with its filters, until the last page', async () => {
    const env = await seeded();
    const first = await runCli(['runs', '--status', 'awaiting_input', '--limit', '2'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^r-4 {2}refund v1 {2}awaiting_input .* {2}for c-100\nr-3 {2}refund v1/);
    const more = /More: (countersign runs .*)$/m.exec(first.stdout)?.[1] ?? '';
    expect(more).toMatch(/^countersign runs --status awaiting_input --limit 2 --after \S+$/);
    const second = await runCli(more.split(' ').slice(1), env);
    expect(
      second.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ')[0]),
    ).toEqual(['r-2', 'r-1']);
    expect(second.stdout).not.toMatch(/More:/);
  });

  it('filters exactly by customer and workflow; with --json stdout is the array and the cursor goes to stderr', async () => {
    const env = await seeded();
    const theirs = await runCli(['runs', '--customer', 'c-100', '--limit', '2', '--json'], env);
    expect((theirs.json as Array<{ run: string }>).map((row) => row.run)).toEqual(['r-4', 'r-2']);
    const { next } = JSON.parse(theirs.stderr) as { next: string };
    const rest = await runCli(
      ['runs', '--customer', 'c-100', '--limit', '2', '--json', '--after', next],
      env,
    );
    expect(rest.json).toEqual([
      expect.objectContaining({ run: 'r-0', customer: 'c-100', status: 'completed' }),
    ]);
    expect(rest.stderr).toBe('');
    const oldest = await runCli(['runs', '--workflow', 'refund', '--sort', 'oldest', '--json'], env);
    expect((oldest.json as Array<{ run: string }>).map((row) => row.run)).toEqual([
      'r-0',
      'r-1',
      'r-3',
      'r-4',
    ]);
    expect((await runCli(['runs', '--customer', 'C-100'], env)).stdout.trim()).toBe('No runs match.');
  });

  it('a bad status, sort, limit or cursor is a typed error', async () => {
    const env = await seeded();
    const code = async (args: string[]) =>
      ((await runCli([...args, '--json'], env)).json as { error: { code: string } }).error.code;
    expect(await code(['runs', '--status', 'done'])).toBe('INVALID_INPUT');
    expect(await code(['runs', '--sort', 'updated'])).toBe('INVALID_INPUT');
    expect(await code(['runs', '--limit', '0'])).toBe('INVALID_INPUT');
    expect(await code(['runs', '--after', 'garbage!'])).toBe('INVALID_CURSOR');
    const newest = await runCli(['runs', '--limit', '1', '--json'], env);
    const { next } = JSON.parse(newest.stderr) as { next: string };
    expect(await code(['runs', '--sort', 'oldest', '--after', next])).toBe('INVALID_CURSOR');
  });
});
