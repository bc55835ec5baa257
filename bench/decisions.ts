import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { countExecutions, decisionAgent } from './decision-agent.ts';

export interface DecisionRow {
  processes: number;
  decisions: number;
  decisionsPerSecond: number;
  won: number;
  alreadyDecided: number;
  /** Tool runs observed through its own side effects: must equal `decisions`. */
  toolRuns: number;
  doubleExecutions: number;
}

async function prepare(path: string, count: number): Promise<string[]> {
  const store = createSqliteStore({ path });
  const agent = decisionAgent(store);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const turn = await agent.chat(`s-${i}`, 'Refund order 1044, please.');
    ids.push(turn.approvals[0]!.id);
  }
  await store.close();
  return ids;
}

/** Approve + execute + continue, one decision after another, in this process. */
export async function decisionsInProcess(dir: string, count: number): Promise<DecisionRow> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'decisions.db');
  const ids = await prepare(path, count);
  const store = createSqliteStore({ path });
  const agent = decisionAgent(store);
  const started = performance.now();
  for (const id of ids) await agent.approve(id, { by: 'bench' });
  const elapsed = performance.now() - started;
  const { runs, doubles } = await countExecutions(store, ids);
  await store.close();
  return {
    processes: 1,
    decisions: count,
    decisionsPerSecond: Math.round(count / (elapsed / 1000)),
    won: count,
    alreadyDecided: 0,
    toolRuns: runs,
    doubleExecutions: doubles,
  };
}

/** `processes` workers all try to approve every request on one file; each is decided once. */
export async function decisionsContended(
  dir: string,
  count: number,
  processes: number,
): Promise<DecisionRow> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'contended.db');
  const ids = await prepare(path, count);
  const files = Array.from({ length: processes }, (_, i) => {
    const file = join(dir, `ids-${i}.json`);
    // Each worker walks the list from a different starting point, so they collide constantly.
    const offset = Math.floor((i * ids.length) / processes);
    writeFileSync(file, JSON.stringify([...ids.slice(offset), ...ids.slice(0, offset)]));
    return file;
  });
  const worker = join(import.meta.dirname, 'decision-worker.ts');
  const started = performance.now();
  const results = await Promise.all(
    files.map(
      (file, i) =>
        new Promise<{ won: number; lost: number }>((resolve, reject) => {
          const child = spawn(process.execPath, [worker, path, file, `worker-${i}`], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout.on('data', (chunk) => {
            out += chunk;
          });
          child.on('close', (code) =>
            code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`worker ${i} exited ${code}`)),
          );
        }),
    ),
  );
  const elapsed = performance.now() - started;
  const store = createSqliteStore({ path });
  const { runs, doubles } = await countExecutions(store, ids);
  await store.close();
  const won = results.reduce((sum, r) => sum + r.won, 0);
  return {
    processes,
    decisions: count,
    decisionsPerSecond: Math.round(count / (elapsed / 1000)),
    won,
    alreadyDecided: results.reduce((sum, r) => sum + r.lost, 0),
    toolRuns: runs,
    doubleExecutions: doubles,
  };
}
