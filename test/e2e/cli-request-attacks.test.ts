import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

/**
 * A hostile user of `countersign approve|reject|answer --as NAME` on a workflow's port
 * request (issue 11's one request model): the raiser, the customer, `--always`, smuggled
 * fields, racing processes, edited rows, bad ids and bad JSON. Each command its own process.
 */
type ErrorOut = { error: { code: string; message: string } };

async function waiting() {
  const store = tempStore();
  const env = { COUNTERSIGN_STORE: store };
  const started = await runCli(
    [
      'run',
      'start',
      'refund',
      '1040',
      '--run',
      'refund-1040',
      '--as',
      'backend',
      '--user',
      'c-300',
      '--json',
    ],
    env,
  );
  expect(started.code, started.stderr).toBe(0);
  const id = (started.json as { requests: Array<{ id: string }> }).requests[0]!.id;
  const cli = async (...args: string[]) => {
    const run = await runCli([...args, '--json'], env);
    return { code: run.code, json: run.json as ErrorOut & { status: string }, out: run.stdout + run.stderr };
  };
  const status = async () => (await cli('show', id)).json.status;
  const edit = (sql: string) => {
    const db = new DatabaseSync(store.slice('sqlite:'.length));
    try {
      return Number(db.prepare(sql).run().changes);
    } finally {
      db.close();
    }
  };
  const read = (sql: string) => {
    const db = new DatabaseSync(store.slice('sqlite:'.length));
    try {
      return db
        .prepare(sql)
        .all()
        .map((row) => ({ ...row }));
    } finally {
      db.close();
    }
  };
  return { id, cli, status, edit, read };
}

describe('countersign approve|reject|answer on a port request, as a hostile user', () => {
  it('the raiser and the customer are refused with every verb; nothing is recorded', async () => {
    const { id, cli, status } = await waiting();
    for (const as of ['backend', 'BACKEND', 'c-300']) {
      for (const verb of [
        ['approve', id, '--reason', 'mine'],
        ['reject', id, '--reason', 'mine'],
        ['answer', id, '{"approved": true, "note": "mine"}'],
        ['run', 'respond', 'refund-1040', id, '{"approved": true, "note": "mine"}'],
      ]) {
        const refused = await cli(...verb, '--as', as);
        expect(refused.code, `${as} ${verb[0]}: ${refused.out}`).not.toBe(0);
        expect(refused.json.error.code).toBe('FORBIDDEN');
      }
    }
    expect(await status()).toBe('pending');
  });

  it('--always on a port, and an answer with fields the port does not take, are refused', async () => {
    const { id, cli, status } = await waiting();
    const always = await cli('approve', id, '--always', '--as', 'mona');
    expect(always.code).not.toBe(0);
    expect(always.json.error.code).toBe('INVALID_INPUT');
    expect(always.json.error.message).toContain('remember applies to tool calls only');
    const smuggled = await cli(
      'answer',
      id,
      '{"approved": true, "note": "ok", "amount": 3500}',
      '--as',
      'mona',
    );
    expect(smuggled.code).not.toBe(0);
    expect(smuggled.json.error.code).toBe('INVALID_INPUT');
    expect(smuggled.json.error.message).toContain('amount');
    expect(await status()).toBe('pending');
  });

  it('two processes racing: one wins, the other is told who did', async () => {
    const { id, cli, status } = await waiting();
    const [a, b] = await Promise.all([
      cli('approve', id, '--as', 'mona', '--reason', 'yes'),
      cli('reject', id, '--as', 'lee', '--reason', 'no'),
    ]);
    expect([a.code, b.code].filter((code) => code === 0)).toHaveLength(1);
    const loser = a.code === 0 ? b : a;
    expect(loser.json.error.code).toBe('ALREADY_DECIDED');
    expect(await status()).toBe('answered');
  });

  it.each([
    ['the payload', `UPDATE approvals SET args_json = replace(args_json, '"amount":35', '"amount":3500')`],
    ['the kind', `UPDATE approvals SET kind = 'tool-call'`],
    [
      'the checkpoint',
      `UPDATE workflow_checkpoints SET body = replace(body, '"amount":35,', '"amount":3500,')`,
    ],
  ])('an edited row (%s) is INTEGRITY_VIOLATION, audited, and nothing runs', async (_what, sql) => {
    const { id, cli, edit, read } = await waiting();
    expect(edit(sql)).toBeGreaterThan(0);
    const refused = await cli('answer', id, '{"approved": true, "note": "ok"}', '--as', 'mona');
    expect(refused.code).not.toBe(0);
    expect(refused.json.error.code).toBe('INTEGRITY_VIOLATION');
    expect(read(`SELECT kind FROM audit WHERE kind = 'tamper.refused'`)).toHaveLength(1);
    expect(read(`SELECT key FROM state WHERE key LIKE 'refund:%'`)).toEqual([]);
    expect(read(`SELECT status FROM approvals`)).toEqual([{ status: 'pending' }]);
  });

  it('bad ids and bad JSON are refused before anything is looked up or recorded', async () => {
    const { id, cli, status } = await waiting();
    for (const bad of ['..', '../x', 'a/../b']) {
      const refused = await cli('answer', bad, '{"approved": true, "note": "ok"}', '--as', 'mona');
      expect(refused.code, refused.out).not.toBe(0);
      expect(['INVALID_INPUT', 'NOT_FOUND']).toContain(refused.json.error.code);
    }
    const malformed = await cli('answer', id, '{"approved": tru', '--as', 'mona');
    expect(malformed.json.error.code).toBe('INVALID_INPUT');
    const deep = await cli(
      'answer',
      id,
      `{"approved": true, "note": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      '--as',
      'mona',
    );
    expect(deep.code).not.toBe(0);
    expect(deep.json.error.code).toBe('INVALID_INPUT');
    expect(await status()).toBe('pending');
  });
});
