import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type RunView = {
  run: string;
  workflow: string;
  version: number;
  status: string;
  checkpoint: string;
  requests: Array<{ id: string; port: string; data: unknown; createdAt: string; expiresAt: string | null }>;
  outputs: unknown[];
};
type HistoryEntry = {
  checkpointId: string;
  parentCheckpointId: string | null;
  superstep: number;
  createdAt: string;
};
type ErrorOut = { error: { code: string; message: string } };

const approve = '{"approved": true, "note": "Approved, photo checked."}';
const issued = 'Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.';

function fileStore(): { spec: string; dir: string } {
  const dir = join(mkdtempSync(join(tmpdir(), 'countersign-test-')), 'checkpoints');
  return { spec: `file:${dir}`, dir };
}

const backends: Array<[string, () => string]> = [
  ['sqlite', () => tempStore()],
  ['file', () => fileStore().spec],
];

async function cli(args: string[], env: Record<string, string>) {
  const run = await runCli([...args, '--json'], env);
  return run;
}

async function ok<T>(args: string[], env: Record<string, string>): Promise<T> {
  const run = await cli(args, env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json as T;
}

async function fails(args: string[], env: Record<string, string>, code: string): Promise<string> {
  const run = await cli(args, env);
  expect(run.code, run.stdout).not.toBe(0);
  expect((run.json as ErrorOut).error.code, run.stdout).toBe(code);
  return (run.json as ErrorOut).error.message;
}

describe.each(backends)(
  'refund workflow from the CLI, each step its own process (%s store)',
  (_kind, store) => {
    it('start waits for the manager; resume in a new process re-emits the same request; respond completes it', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      const started = await ok<RunView>(
        ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040'],
        env,
      );
      expect(started).toMatchObject({ run: 'refund-1040', status: 'awaiting_input', outputs: [] });
      expect(started.requests).toEqual([
        {
          id: expect.stringMatching(/^req_/),
          port: 'manager-approval',
          data: { orderId: 1040, amount: 35, reason: 'Damaged cover reported by customer' },
          createdAt: expect.any(String),
          expiresAt: expect.any(String),
        },
      ]);
      const [request] = started.requests;
      // COUNTERSIGN_APPROVAL_TTL is unset: 24h, as for agents' approvals.
      expect(Date.parse(request!.expiresAt ?? '') - Date.parse(request!.createdAt)).toBe(24 * 3_600_000);

      const resumed = await ok<RunView>(['run', 'resume', 'refund-1040'], env);
      expect(resumed.requests).toEqual(started.requests);
      expect(await ok<unknown[]>(['runs'], env)).toMatchObject([
        { run: 'refund-1040', workflow: 'refund', version: 1, status: 'awaiting_input' },
      ]);

      const answered = await ok<RunView>(
        ['run', 'respond', 'refund-1040', started.requests[0]!.id, approve, '--as', 'mona'],
        env,
      );
      expect(answered).toMatchObject({ status: 'completed', requests: [], outputs: [issued] });

      const history = await ok<HistoryEntry[]>(['run', 'history', 'refund-1040'], env);
      expect(history.map((entry) => entry.superstep)).toEqual([0, 1, 2]);
      history.forEach((entry, i) => {
        expect(entry.parentCheckpointId).toBe(i === 0 ? null : history[i - 1]!.checkpointId);
      });
      expect(history[1]!.checkpointId).toBe(started.checkpoint);
      expect(await ok<unknown[]>(['runs'], env)).toMatchObject([{ run: 'refund-1040', status: 'completed' }]);
    });

    it('answers once: a second respond, and all but one of four racing processes, get ALREADY_DECIDED', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      const a = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'a'], env);
      await ok(['run', 'respond', 'a', a.requests[0]!.id, approve, '--as', 'mona'], env);
      const message = await fails(
        ['run', 'respond', 'a', a.requests[0]!.id, approve, '--as', 'max'],
        env,
        'ALREADY_DECIDED',
      );
      expect(message).toContain('answered by mona');

      const b = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1043', '--run', 'b'], env);
      const racers = await Promise.all(
        ['w', 'x', 'y', 'z'].map((by) =>
          cli(
            ['run', 'respond', 'b', b.requests[0]!.id, `{"approved": true, "note": "${by}"}`, '--as', by],
            env,
          ),
        ),
      );
      expect(racers.filter((run) => run.code === 0)).toHaveLength(1);
      for (const loser of racers.filter((run) => run.code !== 0)) {
        expect((loser.json as ErrorOut).error.code).toBe('ALREADY_DECIDED');
      }
      expect(await ok<HistoryEntry[]>(['run', 'history', 'b'], env)).toHaveLength(3);
    });

    it('a wrong shape is INVALID_INPUT and the request stays answerable; unknown ids and port names are NOT_FOUND', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      const run = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r'], env);
      const id = run.requests[0]!.id;
      expect(
        await fails(['run', 'respond', 'r', id, '{"approved": "yes", "note": "x"}'], env, 'INVALID_INPUT'),
      ).toContain('field "approved"');
      await fails(['run', 'respond', 'r', id, 'not json'], env, 'INVALID_INPUT');
      await fails(['run', 'respond', 'r', 'req_unknown', approve], env, 'NOT_FOUND');
      await fails(['run', 'respond', 'r', 'manager-approval', approve], env, 'NOT_FOUND');
      await fails(['run', 'respond', 'nope', id, approve], env, 'NOT_FOUND');
      await fails(['run', 'respond', 'r', '../../x', approve], env, 'INVALID_INPUT');
      expect((await ok<RunView>(['run', 'respond', 'r', id, approve], env)).status).toBe('completed');
    });

    it('resumes the same earlier checkpoint twice: two branches, the checkpoint unchanged', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      const started = await ok<RunView>(
        ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r'],
        env,
      );
      const [first] = await ok<HistoryEntry[]>(['run', 'history', 'r'], env);
      const one = await ok<RunView>(['run', 'resume', 'r', '--from', first!.checkpointId], env);
      const two = await ok<RunView>(['run', 'resume', 'r', '--from', first!.checkpointId], env);
      for (const branch of [one, two]) {
        expect(branch).toMatchObject({ status: 'awaiting_input', requests: [{ port: 'manager-approval' }] });
      }
      expect(new Set([started.requests[0]!.id, one.requests[0]!.id, two.requests[0]!.id]).size).toBe(3);
      const history = await ok<HistoryEntry[]>(['run', 'history', 'r'], env);
      expect(history[0]).toEqual(first);
      expect(history.filter((entry) => entry.parentCheckpointId === first!.checkpointId)).toHaveLength(3);
      // Resuming the latest changes nothing and re-emits its request.
      expect((await ok<RunView>(['run', 'resume', 'r', '--from', two.checkpoint], env)).requests).toEqual(
        two.requests,
      );
      expect(await ok<HistoryEntry[]>(['run', 'history', 'r'], env)).toEqual(history);
      await fails(['run', 'resume', 'r', '--from', 'cp_missing'], env, 'NOT_FOUND');
    });

    it('never refunds the same order twice, even from two runs', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      const a = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'a'], env);
      const b = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'b'], env);
      expect((await ok<RunView>(['run', 'respond', 'a', a.requests[0]!.id, approve], env)).outputs).toEqual([
        issued,
      ]);
      const second = await ok<RunView>(['run', 'respond', 'b', b.requests[0]!.id, approve], env);
      expect(second.outputs[0]).toMatch(
        /^Refund issued already: 35\.00 for order 1040 by run a .*nothing was refunded again/,
      );
    });

    it('refuses to start a run id twice, an unknown workflow, an unknown order and a bad input', async () => {
      const env = { COUNTERSIGN_STORE: store() };
      await ok(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r'], env);
      await fails(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r'], env, 'INVALID_INPUT');
      await fails(['run', 'start', '--as', 'backend', 'nope', '1040', '--run', 'x'], env, 'NOT_FOUND');
      await fails(
        ['run', 'start', '--as', 'backend', 'refund', '"1040"', '--run', 'y'],
        env,
        'INVALID_INPUT',
      );
      await fails(
        ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', '../escape'],
        env,
        'INVALID_INPUT',
      );
      const missing = await cli(['run', 'start', '--as', 'backend', 'refund', '9999', '--run', 'z'], env);
      expect(missing.code).toBe(1);
      expect(missing.json).toMatchObject({
        status: 'failed',
        error: { code: 'NOT_FOUND', executor: 'prepare' },
      });
    });
  },
);

describe('file checkpoint store from the CLI', () => {
  it('writes one JSON file per checkpoint and an index.jsonl line for each', async () => {
    const { spec, dir } = fileStore();
    const started = await ok<RunView>(
      ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040'],
      {
        COUNTERSIGN_STORE: spec,
      },
    );
    const index = readFileSync(join(dir, 'index.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(index).toEqual([
      {
        run: 'refund-1040',
        checkpoint: expect.any(String),
        file: 'runs/refund-1040/00000000.json',
        parent: null,
      },
      {
        run: 'refund-1040',
        checkpoint: started.checkpoint,
        file: 'runs/refund-1040/00000001.json',
        parent: index[0].checkpoint,
      },
    ]);
    const file = JSON.parse(readFileSync(join(dir, 'runs/refund-1040/00000001.json'), 'utf8'));
    expect(file).toMatchObject({
      id: started.checkpoint,
      workflow: 'refund',
      version: 1,
      status: 'awaiting_input',
    });
  });

  it("agent commands on a file store fail with CONFIG_ERROR saying it holds workflow runs only; pending lists its runs' requests", async () => {
    const env = { COUNTERSIGN_STORE: fileStore().spec };
    // The runs' port requests are the whole request book of a file store.
    expect(await ok(['pending'], env)).toEqual([]);
    expect(await fails(['chat', '--as', 'backend', 's', 'hello'], env, 'CONFIG_ERROR')).toContain(
      'workflow runs only',
    );
  });

  it('a corrupted checkpoint file gives CORRUPT_DATA naming the file', async () => {
    const { spec, dir } = fileStore();
    const env = { COUNTERSIGN_STORE: spec };
    await ok(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r'], env);
    const path = join(dir, 'runs', 'r', '00000001.json');
    writeFileSync(path, readFileSync(path, 'utf8').slice(0, 40));
    expect(await fails(['run', 'resume', 'r'], env, 'CORRUPT_DATA')).toContain(path);
    expect(await fails(['runs'], env, 'CORRUPT_DATA')).toContain('00000001.json');
  });

  it('resumes the checked-in version-1 checkpoint directory and completes the refund', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'countersign-test-')), 'v1');
    cpSync(join(import.meta.dirname, '../fixtures/refund-v1/file-store'), dir, { recursive: true });
    const env = { COUNTERSIGN_STORE: `file:${dir}` };
    const fixture = JSON.parse(readFileSync(join(dir, 'runs/refund-1040/00000001.json'), 'utf8'));
    const resumed = await ok<RunView>(['run', 'resume', 'refund-1040'], env);
    expect(resumed.requests.map((request) => request.id)).toEqual([fixture.body.state.requests[0].id]);
    const done = await ok<RunView>(['run', 'respond', 'refund-1040', resumed.requests[0]!.id, approve], env);
    expect(done.outputs).toEqual([issued]);
  });
});
