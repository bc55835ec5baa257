import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `node bench/cli-startup.ts`: how long `countersign` takes to start, finish and exit, next
 * to bare `node -e 0`, measured from outside with hyperfine (`apt-get install hyperfine`).
 * The bin is run with the pinned Node directly and through `npx --no-install` (in this
 * checkout). `approve` decides a fresh copy of one waiting request each run. Writes
 * bench/results/cli-startup-<timestamp>.json (hyperfine's own JSON, plus the medians).
 */
const root = join(import.meta.dirname, '..');
const node = join(root, 'node_modules', '.bin', 'node');
const bin = join(root, 'bin', 'countersign.js');
const runs = Number(process.env.BENCH_RUNS ?? 20);
const pinnedVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
// `node` on PATH outside the checkout's node_modules/.bin (which npm scripts put first).
const path = (process.env.PATH ?? '').split(':').filter((entry) => !entry.includes('node_modules'));
const systemNode = spawnSync('node', ['--version'], {
  encoding: 'utf8',
  env: { ...process.env, PATH: path.join(':') },
}).stdout?.trim();

const dir = mkdtempSync(join(tmpdir(), 'countersign-cli-bench-'));
const db = join(dir, 'db.sqlite');
const seed = join(dir, 'seed.sqlite');
const cache = join(dir, 'compile-cache');
const env = {
  ...process.env,
  PATH: path.join(':'),
  COUNTERSIGN_STORE: `sqlite:${db}`,
  NODE_COMPILE_CACHE: cache,
};
try {
  const chat = spawnSync(
    node,
    [bin, 'chat', 'b1', 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
    {
      env,
      encoding: 'utf8',
    },
  );
  const request = (JSON.parse(chat.stdout) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
  // SQLite in WAL mode: fold the log into the file, so one copy restores the whole store.
  execFileSync(node, [
    '-e',
    `new (require('node:sqlite').DatabaseSync)(${JSON.stringify(db)}).exec('PRAGMA wal_checkpoint(TRUNCATE)')`,
  ]);
  copyFileSync(db, seed);
  const restore = `cp ${seed} ${db} && rm -f ${db}-wal ${db}-shm`;

  const commands: Array<{ name: string; command: string; prepare?: string }> = [
    { name: 'node -e 0', command: `${node} -e 0` },
    { name: 'bin --version', command: `${node} ${bin} --version` },
    { name: 'bin pending', command: `${node} ${bin} pending` },
    { name: 'bin approve', command: `${node} ${bin} approve ${request} --as bench`, prepare: restore },
    // A checkout run as ./bin/countersign.js under an older system Node: it re-runs itself
    // with the pinned one (what that costs is this row minus "bin pending").
    ...(systemNode && systemNode !== pinnedVersion
      ? [{ name: `bin pending (${systemNode})`, command: `/usr/bin/env node ${bin} pending` }]
      : []),
    { name: 'npx --version', command: 'npx --no-install countersign --version' },
    { name: 'npx pending', command: 'npx --no-install countersign pending' },
  ];
  const out = join(dir, 'hyperfine.json');
  const args = ['--warmup', '3', '--runs', String(runs), '--export-json', out, '--style', 'basic'];
  for (const entry of commands) {
    args.push('--command-name', entry.name);
    if (entry.prepare) args.push('--prepare', entry.prepare);
    else args.push('--prepare', 'true');
    args.push(entry.command);
  }
  const run = spawnSync('hyperfine', args, { env, cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (run.status !== 0) throw new Error(`hyperfine failed (exit ${run.status}); is it installed?`);
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    results: Array<{ command: string; median: number; user: number; system: number }>;
  };
  const base = report.results[0]!.median;
  const rows = report.results.map((result) => ({
    name: result.command,
    medianMs: Math.round(result.median * 1000),
    overNodeMs: Math.round((result.median - base) * 1000),
    cpuMs: Math.round((result.user + result.system) * 1000),
  }));
  console.log('\ncommand                     median ms   over node -e 0   cpu ms (mean)');
  for (const row of rows)
    console.log(
      `${row.name.padEnd(28)}${String(row.medianMs).padStart(9)}${String(row.overNodeMs).padStart(17)}${String(row.cpuMs).padStart(16)}`,
    );
  const at = new Date().toISOString();
  const results = join(root, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const file = join(results, `cli-startup-${at.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ at, node: process.version, runs, rows, hyperfine: report }, null, 2)}\n`,
  );
  console.log(`\nwrote ${file}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
