import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir, type LoopRow, rawSqliteCommits, runLoop, seedExportBytes } from './agent-loop.ts';
import { type DecisionRow, decisionsContended, decisionsInProcess } from './decisions.ts';
import { benchFlatCost, printFlatCost } from './flat-cost.ts';
import { benchHttp, printHttpTable } from './http.ts';
import { benchPostgres } from './postgres.ts';
import { benchQueue } from './queue.ts';
import { benchWorkflows, printWorkflowTable } from './workflow.ts';

/**
 * `npm run bench`: prints tables and writes bench/results/<name>-<timestamp>.json.
 * Each configuration runs `repeats` times and the median run is reported, since this
 * machine is shared and noisy; ratios are taken against a baseline from the same run.
 */
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const sizes = [10, 100, 1000];

function medianBy<T>(rows: T[], key: (row: T) => number): T {
  return [...rows].sort((a, b) => key(a) - key(b))[Math.floor(rows.length / 2)]!;
}

async function sequential<T>(times: number, run: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < times; i++) out.push(await run(i));
  return out;
}

async function main(): Promise<void> {
  const { dir, cleanup } = benchDir();
  try {
    const loop: LoopRow[] = [];
    for (const store of ['memory', 'sqlite'] as const) {
      for (const steps of sizes) {
        const runs: LoopRow[] = [];
        for (let i = 0; i < repeats; i++)
          runs.push(await runLoop(store, steps, join(dir, `${store}-${steps}-${i}`)));
        loop.push(medianBy(runs, (row) => row.stepsPerSecond));
      }
    }
    mkdirSync(join(dir, 'raw'), { recursive: true });
    const raw = medianBy(
      Array.from({ length: repeats }, () => rawSqliteCommits(join(dir, 'raw'), 2000)),
      (row) => row.commitsPerSecond,
    );
    const exportBytes = await seedExportBytes();
    const decisionCount = Number(process.env.BENCH_DECISIONS ?? 500);
    const decisions: DecisionRow[] = [
      medianBy(
        await sequential(repeats, (i) => decisionsInProcess(join(dir, `decide-${i}`), decisionCount)),
        (row) => row.decisionsPerSecond,
      ),
      await decisionsContended(join(dir, 'contended'), decisionCount, 4),
    ];

    console.log(`\nAgent loop, one durable commit per step (median of ${repeats} runs)\n`);
    console.table(
      loop.map((row) => ({
        store: row.store,
        N: row.steps,
        'steps/s': row.stepsPerSecond,
        'first-decile ms/step': row.firstDecileMsPerStep,
        'last-decile ms/step': row.lastDecileMsPerStep,
        'last/first': row.lastOverFirst,
        'logical bytes': row.logicalBytes,
        'stored bytes': row.storedBytes ?? '-',
        'stored/logical': row.storedOverLogical ?? '-',
      })),
    );
    const sqlite1000 = loop.find((row) => row.store === 'sqlite' && row.steps === 1000)!;
    console.log(
      `Raw SQLite commits (WAL, synchronous=FULL, one INSERT per transaction): ${raw.commitsPerSecond}/s`,
    );
    console.log(
      `Agent steps at N=1000 on SQLite: ${sqlite1000.stepsPerSecond}/s = ${Math.round((sqlite1000.stepsPerSecond / raw.commitsPerSecond) * 100)}% of the raw commit rate`,
    );
    console.log(`Seed-scenario session export: ${exportBytes} bytes`);

    console.log(
      '\nDecisions through the library on SQLite (approve + execute + continue, zero-latency model)\n',
    );
    console.table(
      decisions.map((row) => ({
        processes: row.processes,
        decisions: row.decisions,
        'decisions/s': row.decisionsPerSecond,
        won: row.won,
        'already decided': row.alreadyDecided,
        'tool runs': row.toolRuns,
        'double executions': row.doubleExecutions,
      })),
    );

    const postgres = await benchPostgres(repeats, sizes);

    const queue = await benchQueue(Number(process.env.BENCH_QUEUE_DECISIONS ?? 200), repeats);

    const workflow = await benchWorkflows(join(dir, 'workflow'), repeats, sizes);
    printWorkflowTable(workflow, repeats);

    const http = await benchHttp(
      join(dir, 'http'),
      repeats,
      Number(process.env.BENCH_HTTP_DECISIONS ?? 2000),
    );
    printHttpTable(http, repeats);

    // Lists, decisions, expiry and an idle server at 100 / 10,000 / 100,000 waiting
    // (FLAT_SIZES, FLAT_BACKENDS to narrow it; bench/flat-cost.ts runs it alone).
    const flatCost = await benchFlatCost();
    printFlatCost(flatCost);

    const results = {
      name: 'countersign-bench',
      at: new Date().toISOString(),
      node: process.version,
      repeats,
      loop,
      rawSqlite: raw,
      seedExportBytes: exportBytes,
      decisions,
      postgres,
      queue,
      workflow,
      http,
      flatCost,
    };
    const outDir = join(import.meta.dirname, 'results');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `bench-${results.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nWrote ${file}`);
  } finally {
    cleanup();
  }
}

await main();
