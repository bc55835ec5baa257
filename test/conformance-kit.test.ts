import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const vitest = join(root, 'node_modules/.bin/vitest');
const out = () => join(mkdtempSync(join(tmpdir(), 'countersign-kit-')), 'out.json');

interface JsonReport {
  testResults: Array<{
    name: string;
    assertionResults: Array<{ fullName: string; title: string; status: string; failureMessages: string[] }>;
  }>;
}

describe('countersign/testing', () => {
  it('reports a declared skip as skipped with its reason, and fails a skip that names no test', () => {
    const file = out();
    spawnSync(
      vitest,
      ['run', '--config', 'test/kit/vitest.config.ts', '--reporter=json', `--outputFile=${file}`],
      {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, CI: 'true' },
      },
    );
    const report = JSON.parse(readFileSync(file, 'utf8')) as JsonReport;
    const results = report.testResults.flatMap((result) => result.assertionResults);
    const by = (status: string) =>
      results.filter((result) => result.status === status).map((result) => result.title);

    expect(by('skipped').sort()).toEqual([
      'grants a free lease and records owner and expiry [skipped: leases are held elsewhere]',
      'hands out copies [skipped: state is read-only here]',
      'knows nothing of a run that was never saved [skipped: runs are never empty here]',
    ]);
    expect(by('failed')).toEqual([
      'Store conformance: misnamed: every skipped test name names a test of the suite',
    ]);
    const failure = results.find((result) => result.status === 'failed')?.failureMessages.join('\n');
    expect(failure).toContain('"application state > no such test"');
    expect(by('passed')).toContain(
      'creates a store per test that runs, none for a skipped one, and destroys each once',
    );
    // The suites ran around the skips: 10 lease cases, 4 + 5 state cases, the rest of the checkpoint suite.
    expect(by('passed').length).toBeGreaterThan(30);
  }, 120_000);

  it("countersign's own backends skip nothing and run the same cases, every suite", () => {
    const file = out();
    const listed = spawnSync(vitest, ['list', `--json=${file}`, 'src/store'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, CI: 'true' },
    });
    expect(listed.status, listed.stderr).toBe(0);
    const names = (JSON.parse(readFileSync(file, 'utf8')) as Array<{ name: string }>).map(
      (test) => test.name,
    );
    const suites = new Map<string, string[]>();
    for (const name of names) {
      const match = /(?:^| > )((?:Checkpoint)?Store conformance: [^>]+?) > (.*)$/.exec(name);
      if (match?.[1] === undefined || match[2] === undefined) continue;
      suites.set(match[1], [...(suites.get(match[1]) ?? []), match[2]]);
    }
    expect([...suites.keys()].sort()).toEqual([
      'CheckpointStore conformance: file',
      'CheckpointStore conformance: memory',
      'CheckpointStore conformance: postgres',
      'CheckpointStore conformance: sqlite',
      'Store conformance: memory',
      'Store conformance: postgres',
      'Store conformance: sqlite',
    ]);
    const all = [...suites.values()].flat();
    expect(all.filter((name) => name.includes('[skipped:'))).toEqual([]);
    const store = suites.get('Store conformance: memory') ?? [];
    // Every port's suite, the server ports included.
    for (const group of [
      'sessions',
      'leases',
      'stalled sessions',
      'decide',
      'standing rules created by decide',
      'execution ledger',
      'audit trail',
      'application state',
      'export and import',
      'delivery outbox',
      'inbox sign-ins (web sessions)',
    ])
      expect(
        store.some((name) => name.startsWith(`${group} > `)),
        group,
      ).toBe(true);
    expect(suites.get('Store conformance: sqlite')).toEqual(store);
    expect(suites.get('Store conformance: postgres')).toEqual(store);
    // The audited checkpoint backends run the audit cases on top of what the others run.
    expect(suites.get('CheckpointStore conformance: postgres')).toEqual(
      suites.get('CheckpointStore conformance: sqlite'),
    );
    expect(suites.get('CheckpointStore conformance: file')).toEqual(
      suites.get('CheckpointStore conformance: memory'),
    );
  }, 120_000);

  it('every case file takes describe and it from the harness, so a skip can reach each case', () => {
    const dir = join(root, 'src/store/conformance');
    const files = readdirSync(dir).filter(
      (name) => name.endsWith('-cases.ts') || name === 'checkpoint-store-conformance.ts',
    );
    expect(files.length).toBeGreaterThan(10);
    const fromVitest = files.filter((name) =>
      /import\s*\{[^}]*\b(it|describe|test)\b[^}]*\}\s*from\s*'vitest'/.test(
        readFileSync(join(dir, name), 'utf8'),
      ),
    );
    expect(fromVitest).toEqual([]);
  });
});
