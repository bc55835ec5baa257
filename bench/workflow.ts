import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { z } from 'zod';
import type { CheckpointStore } from '../src/store/checkpoint-store.ts';
import { createFileCheckpointStore } from '../src/store/fs/file-checkpoint-store.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { defineWorkflow } from '../src/workflow/define-workflow.ts';
import { executor } from '../src/workflow/executor.ts';
import { createWorkflowRunner } from '../src/workflow/runner.ts';

export interface WorkflowBenchRow {
  store: 'sqlite' | 'file';
  supersteps: number;
  superstepsPerSecond: number;
  /** Stored bytes of the first superstep's checkpoint and of the last one still running (N-1). */
  firstCheckpointBytes: number;
  lastCheckpointBytes: number;
  lastOverFirst: number;
}

const pad = 'x'.repeat(120);

/**
 * A loop of `n` supersteps whose state stays the same size: one executor sends itself a
 * fixed-width message and keeps a fixed-width counter. Every superstep commits a durable
 * checkpoint (SQLite: WAL + synchronous=FULL; file store: fsync of file and directory).
 */
function loopWorkflow(n: number) {
  const width = 8;
  const tick = executor({
    id: 'tick',
    input: z.object({ step: z.string(), pad: z.string() }),
    output: z.object({ step: z.string(), pad: z.string() }),
    state: z.object({ done: z.string() }),
    handle: (message, ctx) => {
      const step = Number(message.step) + 1;
      ctx.setState({ done: String(step).padStart(width, '0') });
      if (step >= n) return undefined;
      return { step: String(step).padStart(width, '0'), pad };
    },
  });
  return defineWorkflow({ name: 'bench-loop', version: 1 }).start(tick).edge(tick, tick).build();
}

function sqliteCheckpointBytes(path: string, run: string, seq: number): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const row = db
      .prepare(
        `SELECT length(CAST(id AS BLOB)) + length(CAST(run AS BLOB)) + ifnull(length(CAST(parent AS BLOB)), 0)
              + length(CAST(created_at AS BLOB)) + length(CAST(workflow AS BLOB)) + length(CAST(status AS BLOB))
              + length(CAST(body AS BLOB)) + 24 AS bytes
         FROM workflow_checkpoints WHERE run = ? AND seq = ?`,
      )
      .get(run, seq);
    return Number(row?.bytes ?? 0);
  } finally {
    db.close();
  }
}

export async function benchWorkflowLoop(
  kind: 'sqlite' | 'file',
  n: number,
  dir: string,
): Promise<WorkflowBenchRow> {
  mkdirSync(dir, { recursive: true });
  const dbPath = join(dir, 'bench.db');
  const store: CheckpointStore =
    kind === 'sqlite'
      ? createSqliteStore({ path: dbPath })
      : createFileCheckpointStore({ dir: join(dir, 'files') });
  const runner = createWorkflowRunner({
    workflows: [loopWorkflow(n)],
    checkpoints: store,
    maxSupersteps: n + 10,
  });
  const started = performance.now();
  const view = await runner.start('bench-loop', 'loop', { step: '00000000', pad });
  const seconds = (performance.now() - started) / 1000;
  if (view.status !== 'completed') throw new Error(`bench run ended ${view.status}`);
  const history = await store.checkpointHistory('loop');
  if (history.length !== n + 1) throw new Error(`expected ${n + 1} checkpoints, found ${history.length}`);
  await store.close();
  // seq 0 holds the input; seq k is superstep k's checkpoint. The last one (n) has nothing
  // pending any more, so the one before it is compared: same state, n-2 supersteps later.
  const bytes = (seq: number) =>
    kind === 'sqlite'
      ? sqliteCheckpointBytes(dbPath, 'loop', seq)
      : statSync(join(dir, 'files', 'runs', 'loop', `${String(seq).padStart(8, '0')}.json`)).size;
  const first = bytes(1);
  const last = bytes(Math.max(1, n - 1));
  return {
    store: kind,
    supersteps: n,
    superstepsPerSecond: Math.round(n / seconds),
    firstCheckpointBytes: first,
    lastCheckpointBytes: last,
    lastOverFirst: Math.round((last / first) * 1000) / 1000,
  };
}

/** Every store × size, `repeats` times each; the median run (by supersteps/s) is reported. */
export async function benchWorkflows(
  dir: string,
  repeats: number,
  sizes: number[],
): Promise<WorkflowBenchRow[]> {
  const rows: WorkflowBenchRow[] = [];
  for (const kind of ['sqlite', 'file'] as const) {
    for (const n of sizes) {
      const runs: WorkflowBenchRow[] = [];
      for (let i = 0; i < repeats; i++)
        runs.push(await benchWorkflowLoop(kind, n, join(dir, `wf-${kind}-${n}-${i}`)));
      runs.sort((a, b) => a.superstepsPerSecond - b.superstepsPerSecond);
      rows.push(runs[Math.floor(runs.length / 2)]!);
    }
  }
  return rows;
}

export function printWorkflowTable(rows: WorkflowBenchRow[], repeats: number): void {
  console.log(`\nWorkflow supersteps, one durable checkpoint per superstep (median of ${repeats} runs)\n`);
  console.table(
    rows.map((row) => ({
      store: row.store,
      N: row.supersteps,
      'supersteps/s': row.superstepsPerSecond,
      'bytes/checkpoint at 1': row.firstCheckpointBytes,
      'bytes/checkpoint at N-1': row.lastCheckpointBytes,
      'last/first': row.lastOverFirst,
    })),
  );
}

// `node bench/workflow.ts` runs this bench alone.
if (import.meta.main) {
  const { benchDir } = await import('./agent-loop.ts');
  const { dir, cleanup } = benchDir();
  const repeats = Number(process.env.BENCH_REPEATS ?? 3);
  try {
    const started = performance.now();
    const rows = await benchWorkflows(dir, repeats, [10, 100, 1000]);
    printWorkflowTable(rows, repeats);
    console.log(`(${Math.round((performance.now() - started) / 1000)} s)`);
  } finally {
    cleanup();
  }
}
