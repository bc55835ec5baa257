import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type Turn = { session: string; status: string; approvals: Array<{ id: string; effect: string }> };

/** The real binary, as a person meets it: help, refusals, defaults, what it prints. */
describe('countersign as a person uses it', () => {
  it('prints the help of the command asked about, the same both ways, and exits 0', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const [flag, word, overview] = await Promise.all([
      runCli(['approve', '--help'], env),
      runCli(['help', 'approve'], env),
      runCli(['--help'], env),
    ]);
    expect(flag.code).toBe(0);
    expect(flag.stdout).toContain(
      'Usage: countersign approve REQUEST [--as NAME] [--reason TEXT] [--edit JSON] [--always | --always-with-args] [--queue] [--json]',
    );
    expect(flag.stdout).toContain('Examples:');
    expect(word.stdout).toBe(flag.stdout);
    expect(overview.stdout).not.toBe(flag.stdout);
    expect(overview.stdout).toContain('Agents and decisions:');
  });

  it('refuses usage mistakes before opening anything, in JSON with --json', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const typo = await runCli(['pending', '--sesion', 's1', '--json'], env);
    expect(typo.code).toBe(1);
    expect(typo.json).toEqual({
      error: { code: 'INVALID_INPUT', message: expect.stringContaining('Did you mean --session?') },
    });
    const extra = await runCli(['pending', 's1'], env);
    expect(extra.code).toBe(1);
    expect(extra.stderr).toMatch(/^error INVALID_INPUT: Unexpected argument "s1"/);
    const serveJson = await runCli(['serve', '--json'], env);
    expect((serveJson.json as { error: { message: string } }).error.message).toContain(
      'has no --json output',
    );
    const console = await runCli(['chat', '--as', 'backend', 'c1', '--json'], env);
    expect((console.json as { error: { message: string } }).error.message).toContain('prints for people');
  });

  it('chat without --user: a new session is the demo customer, said on stderr; the console agrees', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const first = await runCli(
      ['chat', '--as', 'backend', 'd1', 'Please cancel my order 1044.', '--json'],
      env,
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain("New session d1 belongs to c-100, the app's demo customer.");
    expect((first.json as Turn).approvals[0]?.effect).toContain('customer c-100');
    const again = await runCli(
      ['chat', '--as', 'backend', 'd1', 'What is the status of order 1044?', '--json'],
      env,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
    const consoleRun = await runCli(['chat', '--as', 'backend', 'd2'], env, 'exit\n');
    expect(consoleRun.stderr).toContain('New session d2 belongs to c-100');
    expect(consoleRun.stdout).toContain('chatting as c-100 on session "d2"');
    const kitchen = await runCli(['chat', '--as', 'backend', 'k1', 'hello', '--json'], {
      ...env,
      COUNTERSIGN_APP: 'kitchen',
    });
    expect(kitchen.stderr).toContain('New session k1 has no signed-in customer');
  });

  it('a busy port is CONFIG_ERROR naming the fix', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const run = await runCli(['serve', '--port', String(port)], { COUNTERSIGN_STORE: tempStore() });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`error CONFIG_ERROR: Port ${port} on 127.0.0.1 is already in use`);
      expect(run.stderr).toContain('(or set PORT)');
    } finally {
      holder.close();
    }
  });

  it('an app that does not load is named in its own terms, with no path inside countersign', async () => {
    const store = tempStore();
    const dir = dirname(store.slice('sqlite:'.length));
    writeFileSync(join(dir, 'broken.ts'), "import './not-there.ts';\nexport const agents = [];\n");
    const missing = await runCli(['chat', '--as', 'backend', 's', 'hi'], {
      COUNTERSIGN_STORE: store,
      COUNTERSIGN_APP: join(dir, 'nope.ts'),
    });
    expect(missing.stderr).toBe(
      `error CONFIG_ERROR: Cannot load the app "${join(dir, 'nope.ts')}": there is no file ${join(dir, 'nope.ts')}. Set COUNTERSIGN_APP to bookstore, kitchen, or the path of a module that exports \`agents\`.\n`,
    );
    const broken = await runCli(['chat', '--as', 'backend', 's', 'hi'], {
      COUNTERSIGN_STORE: store,
      COUNTERSIGN_APP: join(dir, 'broken.ts'),
    });
    expect(broken.stderr).toContain(
      `it failed while loading: Cannot find module '${join(dir, 'not-there.ts')}'.`,
    );
    expect(broken.stderr).not.toContain('load-app');
  });

  it('--version prints the package version', async () => {
    const run = await runCli(['--version'], {});
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
