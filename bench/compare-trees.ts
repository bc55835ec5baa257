import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * `node bench/compare-trees.ts BASE NEW [ROUNDS]`: the "must not regress" figures of two
 * checkouts (say the commit before a change, in a git worktree with its own `npm ci`, and
 * this one), run alternately ROUNDS times (default 3) on the same machine, medians and ratios.
 * Each round is its own process running that tree's own `bench/` code: the agent loop at
 * N=1000 on SQLite and PostgreSQL, and DECISIONS (default 1000) HTTP decisions with 16
 * clients, then with 20 inboxes open. The machine's noise hits both trees alike.
 */
type Row = Record<string, number>;

const names: Record<string, string> = {
  sqliteSteps: 'agent loop, SQLite, N=1000, steps/s',
  pgSteps: 'agent loop, PostgreSQL, N=1000, steps/s',
  httpUnique: 'HTTP decisions/s, 16 clients',
  httpUniqueP99: 'HTTP p99 ms, 16 clients',
  httpUniqueCpu: 'server CPU µs/decision, 16 clients',
  httpWatched: 'HTTP decisions/s, 16 clients, 20 inboxes open',
  httpWatchedP99: 'HTTP p99 ms, 20 inboxes open',
  httpWatchedCpu: 'server CPU µs/decision, 20 inboxes open',
};

async function one(tree: string): Promise<Row> {
  const { benchDir, runLoop } = await import(resolve(tree, 'bench/agent-loop.ts'));
  const { benchHttp } = await import(resolve(tree, 'bench/http.ts'));
  const { runPostgresLoop } = await import(resolve(tree, 'bench/postgres.ts'));
  const { dir, cleanup } = benchDir();
  try {
    const sqlite = await runLoop('sqlite', 1000, `${dir}/loop`);
    const postgres = await runPostgresLoop(1000);
    const http = await benchHttp(`${dir}/http`, 1, Number(process.env.DECISIONS ?? 1000));
    const mode = (name: string) => http.rows.find((row: { mode: string }) => row.mode === name);
    const unique = mode('unique');
    const watched = mode('watched');
    return {
      sqliteSteps: sqlite.stepsPerSecond,
      pgSteps: postgres.stepsPerSecond,
      httpUnique: unique.decisionsPerSecond,
      httpUniqueP99: unique.p99Ms,
      httpUniqueCpu: unique.serverCpuUsPerDecision,
      httpWatched: watched.decisionsPerSecond,
      httpWatchedP99: watched.p99Ms,
      httpWatchedCpu: watched.serverCpuUsPerDecision,
    };
  } finally {
    cleanup();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

if (process.argv[2] === '--one') {
  console.log(JSON.stringify(await one(process.argv[3]!)));
} else {
  const [base, next] = [process.argv[2], process.argv[3]];
  if (!base || !next) throw new Error('Usage: node bench/compare-trees.ts BASE_DIR NEW_DIR [ROUNDS]');
  const rounds = Number(process.argv[4] ?? 3);
  const runs = new Map<string, Row[]>([
    [base, []],
    [next, []],
  ]);
  for (let i = 0; i < rounds; i++) {
    for (const tree of [base, next]) {
      const out = execFileSync(process.execPath, [import.meta.filename, '--one', tree], { encoding: 'utf8' });
      runs.get(tree)!.push(JSON.parse(out.trim().split('\n').at(-1)!) as Row);
    }
  }
  console.log(`| measure | base (${rounds} runs) | new (${rounds} runs) | median new/base |`);
  console.log('| --- | --- | --- | --- |');
  for (const [key, name] of Object.entries(names)) {
    const b = runs.get(base)!.map((row) => row[key]!);
    const n = runs.get(next)!.map((row) => row[key]!);
    console.log(`| ${name} | ${b.join(', ')} | ${n.join(', ')} | ${(median(n) / median(b)).toFixed(2)} |`);
  }
}
