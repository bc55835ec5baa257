import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chain,
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { answeredBy, at, portRequest } from '../conformance/fixtures.ts';
import { legacyRequestRows } from '../legacy-requests.ts';
import { runFixture } from '../sqlite/run-fixture.ts';
import { createFileCheckpointStore, type FileCheckpointStore } from './file-checkpoint-store.ts';

describeCheckpointStoreConformance({
  name: 'file',
  create: async () => createFileCheckpointStore({ dir: mkdtempSync(join(tmpdir(), 'countersign-cp-file-')) }),
  destroy: async (store) => rmSync(store.dir, { recursive: true, force: true }),
});

describe('file checkpoint store', () => {
  let dir: string;
  let store: FileCheckpointStore;

  beforeEach(() => {
    // The store's directory sits alone in a private parent, so counting the parent's entries
    // sees only what the store might have written there — not other tests' temp files.
    dir = join(mkdtempSync(join(tmpdir(), 'countersign-cp-file-')), 'store');
    mkdirSync(dir);
    store = createFileCheckpointStore({ dir });
  });

  afterEach(() => {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  const indexLines = () =>
    readFileSync(join(dir, 'index.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map(
        (line) =>
          JSON.parse(line) as { run: string; checkpoint: string; file: string; parent: string | null },
      );

  it('writes one JSON file per checkpoint and one index line each, and leaves no temp files', async () => {
    await chain(store, 'refund-1040', 3);
    expect(readdirSync(join(dir, 'runs', 'refund-1040')).sort()).toEqual([
      '00000000.json',
      '00000001.json',
      '00000002.json',
    ]);
    expect(JSON.parse(readFileSync(store.checkpointPath('refund-1040', 1), 'utf8'))).toEqual(
      checkpoint('refund-1040', 1),
    );
    expect(indexLines()).toEqual([
      {
        run: 'refund-1040',
        checkpoint: 'cp-refund-1040-0',
        file: 'runs/refund-1040/00000000.json',
        parent: null,
      },
      {
        run: 'refund-1040',
        checkpoint: 'cp-refund-1040-1',
        file: 'runs/refund-1040/00000001.json',
        parent: 'cp-refund-1040-0',
      },
      {
        run: 'refund-1040',
        checkpoint: 'cp-refund-1040-2',
        file: 'runs/refund-1040/00000002.json',
        parent: 'cp-refund-1040-1',
      },
    ]);
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
  });

  it('never creates anything outside its directory, whatever the run, request or state key', async () => {
    const before = readdirSync(join(dir, '..')).length;
    for (const id of ['../../etc', '..', 'a/../../b', '/abs']) {
      await expect(store.getApproval(id)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    for (const run of ['../../etc', '..', 'a/../../b', '/abs']) {
      await expect(store.saveCheckpoint({ ...checkpoint('r', 0), run }, null)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    await store.setState('../..', '../../../x', 1);
    await store.claimState('/', '/etc/passwd', 1);
    expect(readdirSync(join(dir, '..')).length).toBe(before);
    expect(
      readdirSync(join(dir, 'state')).every((name) => !name.includes('/') && !name.startsWith('.')),
    ).toBe(true);
  });

  it('tolerates duplicate index lines', async () => {
    await chain(store, 'r', 2);
    const text = readFileSync(join(dir, 'index.jsonl'), 'utf8');
    appendFileSync(join(dir, 'index.jsonl'), text);
    const reopened = createFileCheckpointStore({ dir });
    expect(await reopened.getCheckpoint('r', 'cp-r-1')).toEqual(checkpoint('r', 1));
    expect(await reopened.checkpointHistory('r')).toHaveLength(2);
    expect(await reopened.listRuns()).toHaveLength(1);
  });

  it('finds a committed checkpoint the index missed (a crash between file and index line)', async () => {
    await chain(store, 'r', 2);
    writeFileSync(
      join(dir, 'index.jsonl'),
      `${readFileSync(join(dir, 'index.jsonl'), 'utf8').split('\n')[0]}\n`,
    );
    expect(await createFileCheckpointStore({ dir }).getCheckpoint('r', 'cp-r-1')).toEqual(checkpoint('r', 1));
  });

  it('names a truncated checkpoint file in a CORRUPT_DATA error', async () => {
    await chain(store, 'r', 2);
    const path = store.checkpointPath('r', 1);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.slice(0, Math.floor(text.length / 2)));
    const reopened = createFileCheckpointStore({ dir });
    await expect(reopened.latestCheckpoint('r')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(reopened.latestCheckpoint('r')).rejects.toThrow(path);
    await expect(reopened.checkpointHistory('r')).rejects.toThrow(/truncated or edited/);
  });

  it('names a checkpoint file whose fields are wrong, and an empty one', async () => {
    await chain(store, 'r', 2);
    writeFileSync(store.checkpointPath('r', 1), JSON.stringify({ ...checkpoint('r', 1), seq: 'one' }));
    await expect(store.getCheckpoint('r', 'cp-r-1')).rejects.toThrow(/00000001\.json.*"seq"/);
    writeFileSync(store.checkpointPath('r', 1), '');
    await expect(store.latestCheckpoint('r')).rejects.toThrow(/00000001\.json is damaged: it is empty/);
  });

  it('names a damaged index line with its number', async () => {
    await chain(store, 'r', 1);
    appendFileSync(join(dir, 'index.jsonl'), '{"run":"r","checkp');
    await expect(store.getCheckpoint('r', 'cp-r-0')).rejects.toThrow(/index\.jsonl \(line 2\)/);
  });

  it('names a damaged request or decision file', async () => {
    await store.saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
    await store.decide('req_1', answeredBy('a', 20));
    writeFileSync(join(dir, 'requests', 'req_1.decision.json'), '{"verdict":');
    await expect(store.getApproval('req_1')).rejects.toThrow(/req_1\.decision\.json is damaged/);
    writeFileSync(join(dir, 'requests', 'req_1.json'), '{"id":');
    await expect(store.getApproval('req_1')).rejects.toThrow(/req_1\.json is damaged/);
  });

  it('an edited payload in a request file no longer matches its hash (the runner refuses it)', async () => {
    await store.saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
    const path = join(dir, 'requests', 'req_1.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('"amount":35', '"amount":3500'));
    const row = await store.getApproval('req_1');
    expect(row?.args).toMatchObject({ amount: 3500 });
    expect(row?.argsHash).toBe(portRequest('r', 'req_1').argsHash);
    expect(row?.argsJson).not.toBe(portRequest('r', 'req_1').argsJson);
  });

  it('adopts requests of a run written before requests were rows, with the answer its answers/ file recorded', async () => {
    const body = {
      format: 1,
      contract: { nodes: {} },
      state: {
        messages: [],
        requests: [
          {
            id: 'req_old',
            port: 'manager-approval',
            data: { amount: 35 },
            createdAt: '2030-01-01T00:00:01.000Z',
            askedBy: null,
            expiresAt: null,
          },
          {
            id: 'req_new',
            port: 'manager-approval',
            data: { amount: 9 },
            createdAt: '2030-01-01T00:00:02.000Z',
            askedBy: null,
            expiresAt: null,
          },
        ],
        origin: { by: 'desk', customer: 'c-100' },
      },
    };
    const old = join(dir, 'old');
    mkdirSync(join(old, 'runs', 'r', 'answers'), { recursive: true });
    writeFileSync(
      join(old, 'runs', 'r', '00000000.json'),
      JSON.stringify(checkpoint('r', 0, { status: 'awaiting_input', body })),
    );
    writeFileSync(
      join(old, 'runs', 'r', 'answers', 'req_old.json'),
      JSON.stringify({
        run: 'r',
        requestId: 'req_old',
        response: { approved: true },
        by: 'mia',
        at: '2030-01-01T00:00:03.000Z',
      }),
    );
    const reopened = createFileCheckpointStore({ dir: old });
    // The runner adopts what it finds waiting (legacyRequestRows builds the rows it would).
    const latest = await reopened.latestCheckpoint('r');
    await reopened.adoptRequests(legacyRequestRows(latest!, new Map()));
    expect(await reopened.getApproval('req_old')).toMatchObject({
      kind: 'port',
      run: 'r',
      status: 'answered',
      raisedBy: 'desk',
      customer: 'c-100',
      decision: { verdict: 'answered', by: 'mia', response: { approved: true } },
    });
    expect(await reopened.getApproval('req_new')).toMatchObject({ status: 'pending', args: { amount: 9 } });
    expect((await reopened.decide('req_new', answeredBy('mia', 1))).won).toBe(true);
  });

  it('several writer processes: whole index lines, a whole chain, one answer', async () => {
    const writers = 4;
    const count = 15;
    await store.saveCheckpoint(checkpoint('shared', 0), null, {
      requests: [portRequest('shared', 'req_shared', { expiresAt: '2999-01-01T00:00:00.000Z' })],
    });
    const startAt = String(Date.now() + 800);
    const outputs = await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        runFixture('../fs/writer-race.fixture.ts', [dir, `w${i}`, String(count), startAt]),
      ),
    );
    const results = outputs.map(
      (out) => JSON.parse(out) as { wins: number; conflicts: number; answered: boolean },
    );
    expect(results.filter((result) => result.answered)).toHaveLength(1);
    expect(results.every((result) => result.wins === count)).toBe(true);

    const lines = indexLines();
    expect(lines).toHaveLength(1 + writers * count * 2);
    expect(new Set(lines.map((line) => line.checkpoint)).size).toBe(lines.length);

    const history = await store.checkpointHistory('shared');
    expect(history).toHaveLength(1 + writers * count);
    history.forEach((entry, i) => {
      expect(entry.parentCheckpointId).toBe(i === 0 ? null : history[i - 1]!.checkpointId);
    });
    for (let i = 0; i < writers; i++) {
      const own = await store.checkpointHistory(`own-w${i}`);
      expect(own.map((entry) => entry.checkpointId)).toEqual(
        Array.from({ length: count }, (_, seq) => `cp-w${i}-own-${seq}`),
      );
    }
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
  }, 60_000);

  it('a store written before the run index: the first erasure or purge indexes its runs once, from what they say', async () => {
    const origin = (customer: string | null) => ({ state: { origin: { by: 'desk', customer } } });
    // Files as an older countersign wrote them: no `customer` beside the body, no run-index/.
    await store.saveCheckpoint(checkpoint('r-old', 0, { body: origin('c-100') }), null);
    await store.saveCheckpoint(checkpoint('r-other', 0, { body: origin('c-200') }), null);
    await store.saveCheckpoint(checkpoint('r-done', 0, { status: 'completed', body: origin(null) }), null);
    rmSync(join(dir, 'run-index'), { recursive: true, force: true });
    for (const run of ['r-old', 'r-other', 'r-done']) {
      const path = store.checkpointPath(run, 0);
      const { customer: _customer, ...older } = JSON.parse(readFileSync(path, 'utf8'));
      writeFileSync(path, `${JSON.stringify(older)}\n`);
    }
    const reopened = createFileCheckpointStore({ dir });
    expect((await reopened.listRuns()).map((run) => [run.run, run.customer])).toEqual([
      ['r-done', null],
      ['r-old', 'c-100'],
      ['r-other', 'c-200'],
    ]);
    expect(await reopened.erasePrincipal({ principal: 'c-100', at: at(50) })).toMatchObject({ runs: 1 });
    expect(readdirSync(join(dir, 'run-index'))).toContain('built');
    expect(
      await reopened.purgeBatch({ before: { runs: at(90) }, limit: 5, at: at(95), nowMs: 0 }),
    ).toMatchObject({ runs: 1 });
    expect((await reopened.listRuns()).map((run) => run.run)).toEqual(['r-other']);
  });

  it("a marker naming a customer for a run another customer's save won is never taken for theirs", async () => {
    await store.saveCheckpoint(checkpoint('r', 0, { customer: 'c-200' }), null);
    // What a losing save for c-100 leaves behind: its marker, written before it lost the run id.
    const theirs = join(dir, 'run-index', 'customer', 'c-100');
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'r'), '');
    expect(await store.erasePrincipal({ principal: 'c-100', at: at(50) })).toMatchObject({ runs: 0 });
    expect(await store.latestCheckpoint('r')).not.toBeNull();
    expect(existsSync(theirs)).toBe(false);
    expect((await store.pageRuns({ limit: 5, customer: 'c-100' })).items).toEqual([]);
    expect((await store.pageRuns({ limit: 5, customer: 'c-200' })).items.map((run) => run.run)).toEqual([
      'r',
    ]);
  });

  it('a marker found under a customer id differing in case only is left be: a case-insensitive file system shares the folder', async () => {
    await store.saveCheckpoint(checkpoint('r', 0, { customer: 'C-100' }), null);
    // What macOS or Windows shows under customer/c-100: the very marker of C-100's run.
    const folded = join(dir, 'run-index', 'customer', 'c-100');
    mkdirSync(folded, { recursive: true });
    writeFileSync(join(folded, 'r'), '');
    expect((await store.pageRuns({ limit: 5, customer: 'c-100' })).items).toEqual([]);
    expect(await store.erasePrincipal({ principal: 'c-100', at: at(50) })).toMatchObject({ runs: 0 });
    expect(existsSync(join(folded, 'r'))).toBe(true);
    expect(await store.erasePrincipal({ principal: 'C-100', at: at(51) })).toMatchObject({ runs: 1 });
  });

  it('a customer id that is no file name stays inside the run index, and is found and erased by it', async () => {
    const odd = '../../../etc/c 100';
    await store.saveCheckpoint(checkpoint('r', 0, { customer: odd, status: 'completed' }), null);
    expect(readdirSync(join(dir, 'run-index', 'customer'))).toEqual([
      '%2E%2E%2F%2E%2E%2F%2E%2E%2Fetc%2Fc%20100',
    ]);
    expect((await store.pageRuns({ limit: 5, customer: odd })).items.map((run) => run.run)).toEqual(['r']);
    expect(await store.erasePrincipal({ principal: odd, at: at(50) })).toMatchObject({ runs: 1 });
    expect(readdirSync(join(dir, 'run-index', 'customer'))).toEqual([]);
  });

  it('a process that read a run before another erased it cannot save it back: its next save is a conflict', async () => {
    // The server holds the run (it has read or written its latest); `countersign erase`, another
    // process, erases the customer meanwhile.
    const eraser = createFileCheckpointStore({ dir });
    const first = checkpoint('r', 0, { customer: 'c-100', status: 'awaiting_input' });
    expect((await store.saveCheckpoint(first, null)).saved).toBe(true);
    expect(await eraser.erasePrincipal({ principal: 'c-100', at: at(50) })).toMatchObject({ runs: 1 });
    const late = checkpoint('r', 1, { createdAt: at(51), customer: 'c-100', body: { secret: 'Elm St' } });
    expect(await store.saveCheckpoint(late, 'cp-r-0')).toEqual({ saved: false, latest: null });
    expect(existsSync(join(dir, 'runs', 'r'))).toBe(false);
    expect(await eraser.latestCheckpoint('r')).toBeNull();
    // The run id taken again by a new run: the old holder's save is still a conflict.
    const again = checkpoint('r', 0, { id: 'cp-new-0', customer: 'c-300' });
    expect((await eraser.saveCheckpoint(again, null)).saved).toBe(true);
    expect(await store.saveCheckpoint(late, 'cp-r-0')).toMatchObject({
      saved: false,
      latest: { id: 'cp-new-0' },
    });
    expect((await eraser.checkpointHistory('r')).map((entry) => entry.checkpointId)).toEqual(['cp-new-0']);
  });

  it("writes the run's customer in clear in its checkpoint file, and the run index beside the run", async () => {
    await store.saveCheckpoint(checkpoint('r', 0, { customer: 'c-100', status: 'completed' }), null);
    expect(JSON.parse(readFileSync(store.checkpointPath('r', 0), 'utf8'))).toMatchObject({
      customer: 'c-100',
    });
    expect(readdirSync(join(dir, 'run-index', 'customer', 'c-100'))).toEqual(['r']);
    expect(readdirSync(join(dir, 'run-index', 'ended'))).toEqual([`${at(0)}~r`]);
  });
});
