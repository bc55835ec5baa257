import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDir, benchLoop, printLoopTable } from './agent-loop.ts';
import { type DecisionRow, decisionsContended, decisionsInProcess } from './decisions.ts';
import { benchEncryption } from './encryption.ts';
import { benchFlatCost, printFlatCost } from './flat-cost.ts';
import { benchHttp, printHttpTable } from './http.ts';
import { benchHttpPostgres, printHttpPostgresTable } from './http-postgres.ts';
import { benchInstances, printInstanceTable } from './instances.ts';
import { spawnLatencyProxy } from './latency-proxy.ts';
import { admin, BENCH_PG_URL, benchPostgres, postgresProblem } from './postgres.ts';
import { benchQueue, printQueueTable } from './queue.ts';
import { benchWorkflows, printWorkflowTable } from './workflow.ts';

/**
 * `npm run bench`: prints tables and writes bench/results/<name>-<timestamp>.json.
 * `npm run bench -- --list` names the sections; `--only http-postgres,instances` runs those.
 * Each configuration runs `repeats` times and the median run is reported, since this
 * machine is shared and noisy; ratios are taken against a baseline (a raw commit rate, one
 * instance, one worker) measured in the same run, and CPU µs per operation is printed beside
 * every rate: on a shared machine it moves far less than a rate does.
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

/** The median time of `SELECT 1` on one connection to `url`, in ms to two decimals. */
async function medianRoundTripMs(url: string): Promise<number> {
  return admin(async (client) => {
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const started = performance.now();
      await client.query('SELECT 1');
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return Math.round(times[25]! * 100) / 100;
  }, url);
}

interface Section {
  name: string;
  /** What `--list` says it measures. */
  about: string;
  postgres: boolean;
  run(dir: string): Promise<unknown>;
}

const sections: Section[] = [
  {
    name: 'agent-loop',
    about: 'agent loop on memory and SQLite, N = 10/100/1000 steps, beside raw SQLite commits',
    postgres: false,
    async run(dir) {
      const bench = await benchLoop(join(dir, 'loop'), repeats);
      printLoopTable(bench, repeats);
      return bench;
    },
  },
  {
    name: 'decisions',
    about: 'decisions through the library on SQLite: one process, then 4 racing processes',
    postgres: false,
    async run(dir) {
      const count = Number(process.env.BENCH_DECISIONS ?? 500);
      const rows: DecisionRow[] = [
        medianBy(
          await sequential(repeats, (i) => decisionsInProcess(join(dir, `decide-${i}`), count)),
          (row) => row.decisionsPerSecond,
        ),
        await decisionsContended(join(dir, 'contended'), count, 4),
      ];
      console.log(
        '\nDecisions through the library on SQLite (approve + execute + continue, zero-latency model)\n',
      );
      console.table(
        rows.map((row) => ({
          processes: row.processes,
          decisions: row.decisions,
          'decisions/s': row.decisionsPerSecond,
          won: row.won,
          'already decided': row.alreadyDecided,
          'tool runs': row.toolRuns,
          'double executions': row.doubleExecutions,
        })),
      );
      return rows;
    },
  },
  {
    name: 'agent-loop-postgres',
    about: 'the agent loop on PostgreSQL, beside raw PostgreSQL commits',
    postgres: true,
    run: () => benchPostgres(repeats, sizes),
  },
  {
    name: 'workers',
    about: 'decisions continued by 1, 2, 4 and 8 pg-boss worker processes',
    postgres: true,
    async run() {
      const bench = await benchQueue(Number(process.env.BENCH_QUEUE_DECISIONS ?? 200), repeats);
      if (bench) printQueueTable(bench, repeats);
      return bench;
    },
  },
  {
    name: 'workflow',
    about: 'workflow supersteps, one checkpoint each, on SQLite and PostgreSQL',
    postgres: false,
    async run(dir) {
      const rows = await benchWorkflows(join(dir, 'workflow'), repeats, sizes);
      printWorkflowTable(rows, repeats);
      return rows;
    },
  },
  {
    name: 'http-sqlite',
    about: 'HTTP decisions on SQLite, 16 clients: unique, contended, 20 inboxes open, library',
    postgres: false,
    async run(dir) {
      const bench = await benchHttp(
        join(dir, 'http'),
        repeats,
        Number(process.env.BENCH_HTTP_DECISIONS ?? 2000),
      );
      printHttpTable(bench, repeats);
      return bench;
    },
  },
  {
    name: 'http-postgres',
    about: 'HTTP decisions on PostgreSQL, 16 clients: transactions, round trips, CPU µs per decision',
    postgres: true,
    async run(dir) {
      const bench = await benchHttpPostgres(
        join(dir, 'http-postgres'),
        repeats,
        Number(process.env.BENCH_HTTP_DECISIONS ?? 1000),
      );
      printHttpPostgresTable(bench, repeats);
      return bench;
    },
  },
  {
    name: 'http-postgres-remote',
    about:
      'the same HTTP decisions with PostgreSQL behind a proxy that delays each packet 1 ms each way (a database on another machine)',
    postgres: true,
    async run(dir) {
      const delayMs = Number(process.env.BENCH_PG_DELAY_MS ?? 1);
      const upstream = new URL(BENCH_PG_URL);
      const proxy = await spawnLatencyProxy(`${upstream.hostname}:${upstream.port || 5432}`, delayMs);
      try {
        const proxied = new URL(BENCH_PG_URL);
        proxied.hostname = '127.0.0.1';
        proxied.port = String(proxy.port);
        const roundTripMs = await medianRoundTripMs(proxied.href);
        console.log(
          `\nPostgreSQL behind a proxy adding ${delayMs} ms each way: a round trip takes ${roundTripMs} ms (median of 50)`,
        );
        const bench = await benchHttpPostgres(
          join(dir, 'http-postgres-remote'),
          repeats,
          Number(process.env.BENCH_HTTP_DECISIONS ?? 1000),
          16,
          proxied.href,
        );
        printHttpPostgresTable(bench, repeats);
        return { ...bench, delayMs, roundTripMs };
      } finally {
        proxy.stop();
      }
    },
  },
  {
    name: 'instances',
    about: 'HTTP decisions with 1, 2 and 4 serve instances on one PostgreSQL database',
    postgres: true,
    async run() {
      const bench = await benchInstances(repeats, Number(process.env.BENCH_HTTP_DECISIONS ?? 1000));
      printInstanceTable(bench, repeats);
      return bench;
    },
  },
  {
    name: 'encryption',
    about: 'the agent loop and HTTP decisions on SQLite with encryption at rest off and on, interleaved',
    postgres: false,
    async run() {
      const result = await benchEncryption({
        repeats,
        steps: Number(process.env.BENCH_STEPS ?? 500),
        decisions: Number(process.env.BENCH_HTTP_DECISIONS ?? 500),
      });
      console.log(
        '\nEncryption at rest, on / off (CPU µs per step and per decision are the steadier figures)',
      );
      console.log(result.onOverOff);
      return result;
    },
  },
  {
    name: 'flat-cost',
    about:
      'listing, deciding, expiring and an idle server at 100 / 10,000 / 100,000 waiting (FLAT_SIZES, FLAT_BACKENDS)',
    postgres: false,
    async run() {
      const result = await benchFlatCost();
      printFlatCost(result);
      return result;
    },
  },
];

function chosen(only: string[] | undefined): Section[] {
  if (only === undefined || only.length === 0) return sections;
  const names = only.flatMap((value) => value.split(',')).map((name) => name.trim());
  const unknown = names.filter((name) => !sections.some((section) => section.name === name));
  if (unknown.length > 0) {
    console.error(
      `bench: no section ${unknown.join(', ')}. The sections are: ${sections.map((s) => s.name).join(', ')} (npm run bench -- --list).`,
    );
    process.exit(2);
  }
  return sections.filter((section) => names.includes(section.name));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { only: { type: 'string', multiple: true }, list: { type: 'boolean' } },
  });
  if (values.list) {
    const width = Math.max(...sections.map((section) => section.name.length));
    for (const section of sections) console.log(`${section.name.padEnd(width)}  ${section.about}`);
    return;
  }
  const run = chosen(values.only);
  const { dir, cleanup } = benchDir();
  const results: Record<string, unknown> = {
    name: 'countersign-bench',
    at: new Date().toISOString(),
    node: process.version,
    repeats,
    sections: run.map((section) => section.name),
  };
  try {
    const problem = run.some((section) => section.postgres) ? await postgresProblem() : null;
    for (const section of run) {
      if (section.postgres && problem !== null) {
        const message = `${section.name} skipped: PostgreSQL does not answer (${problem}). Start PostgreSQL on 127.0.0.1:5432 or set COUNTERSIGN_BENCH_PG.`;
        if (process.env.CI) throw new Error(message);
        console.log(`\n${message}`);
        results[section.name] = { skipped: problem };
        continue;
      }
      const started = performance.now();
      results[section.name] = await section.run(dir);
      console.log(`(${section.name}: ${Math.round((performance.now() - started) / 1000)} s)`);
    }
    const outDir = join(import.meta.dirname, 'results');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `bench-${String(results.at).replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    if (run.length === sections.length)
      writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nWrote ${file}`);
  } finally {
    cleanup();
  }
}

await main();
