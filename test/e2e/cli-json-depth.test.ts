import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type ErrorOut = { error: { code: string; message: string } };
const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

describe('CLI arguments and files that hold JSON are held to 64 levels', () => {
  it('run start, run respond and session import refuse too-deep JSON with INVALID_INPUT', async () => {
    const store = tempStore();
    const env = { COUNTERSIGN_STORE: store };
    const refused = async (args: string[]) => {
      const run = await runCli([...args, '--json'], env);
      expect(run.code, run.stdout + run.stderr).not.toBe(0);
      expect((run.json as ErrorOut).error.code, run.stdout).toBe('INVALID_INPUT');
      expect((run.json as ErrorOut).error.message).toContain('deeper than 64 levels');
      expect(run.stderr).not.toContain('Maximum call stack');
    };
    await refused(['run', 'start', '--as', 'backend', 'refund', nested(2_000), '--run', 'deep']);
    const started = await runCli(
      ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r1', '--json'],
      env,
    );
    expect(started.code, started.stdout + started.stderr).toBe(0);
    const requestId = (started.json as { requests: Array<{ id: string }> }).requests[0]!.id;
    await refused([
      'run',
      'respond',
      'r1',
      requestId,
      `{"approved":true,"note":${nested(2_000)}}`,
      '--as',
      'mona',
    ]);
    const file = join(store.slice('sqlite:'.length), '..', 'deep.json');
    writeFileSync(file, `{"schemaVersion":1,"x":${nested(30_000)}}`);
    await refused(['session', 'import', file]);
  });
});
