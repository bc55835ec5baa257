import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as everything from '../src/index.ts';
import * as postgres from '../src/postgres.ts';
import * as server from '../src/server.ts';
import { packagesLoaded } from './helpers/loaded-packages.ts';

const root = resolve(import.meta.dirname, '..');
const entry = (name: string) => resolve(root, 'src', `${name}.ts`);

const HTTP = ['hono', '@hono/node-server'];
const POSTGRES = ['pg', 'pg-boss', 'pg-pool', 'pg-protocol'];
const TEST_RUNNER = ['vitest', '@vitest/runner'];
// The server's /metrics only: prom-client is a dependency of countersign/server's code path.
const METRICS = ['prom-client', 'tdigest', 'bintrees'];

describe('entry points', () => {
  it('importing countersign loads no HTTP server, no PostgreSQL driver and no test runner', () => {
    const loaded = packagesLoaded(entry('index'));
    expect(loaded.filter((name) => [...HTTP, ...POSTGRES, ...TEST_RUNNER].includes(name))).toEqual([]);
  });

  it('importing countersign loads no metrics client; the tracing API it loads is dependency-free', () => {
    const loaded = packagesLoaded(entry('index'));
    expect(loaded.filter((name) => METRICS.includes(name))).toEqual([]);
    // @opentelemetry/api is a no-op without an SDK and has no dependencies of its own.
    expect(loaded.filter((name) => name.startsWith('@opentelemetry/'))).toEqual(['@opentelemetry/api']);
    const pkg = JSON.parse(
      readFileSync(resolve(root, 'node_modules/@opentelemetry/api/package.json'), 'utf8'),
    ) as { dependencies?: Record<string, string> };
    expect(pkg.dependencies ?? {}).toEqual({});
  });

  it('countersign/postgres loads pg only when a store, bus or queue is opened', () => {
    const loaded = packagesLoaded(entry('postgres'));
    expect(loaded.filter((name) => [...HTTP, ...POSTGRES, ...TEST_RUNNER].includes(name))).toEqual([]);
  });

  it('countersign/server loads hono, and no PostgreSQL driver or test runner', () => {
    const loaded = packagesLoaded(entry('server'));
    expect(loaded).toEqual(expect.arrayContaining([...HTTP, 'prom-client']));
    expect(loaded.filter((name) => [...POSTGRES, ...TEST_RUNNER].includes(name))).toEqual([]);
  });

  it('countersign/testing loads vitest, and no HTTP server or PostgreSQL driver', () => {
    const loaded = packagesLoaded(entry('testing'));
    expect(loaded).toContain('vitest');
    expect(loaded.filter((name) => [...HTTP, ...POSTGRES].includes(name))).toEqual([]);
  });

  it('package.json maps every entry to its compiled JavaScript and declarations', () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string } | string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const entries = Object.entries(pkg.exports).filter(([subpath]) => subpath !== './package.json');
    expect(entries.map(([subpath]) => subpath)).toEqual([
      '.',
      './authoring',
      './server',
      './postgres',
      './testing',
    ]);
    for (const [subpath, target] of entries) {
      if (typeof target === 'string') throw new Error(`${subpath} has no types condition`);
      const name = subpath === '.' ? 'index' : subpath.slice(2);
      expect(target).toEqual({ types: `./dist/src/${name}.d.ts`, default: `./dist/src/${name}.js` });
      expect(existsSync(entry(name)), `src/${name}.ts`).toBe(true);
    }
    // vitest is needed by countersign/testing only, so a library user is never asked for it.
    expect(pkg.peerDependencies.vitest).toBeDefined();
    expect(pkg.peerDependenciesMeta.vitest?.optional).toBe(true);
  });

  it('the PostgreSQL exports stay importable from countersign for this release, as the same bindings', () => {
    for (const [name, value] of Object.entries(postgres))
      expect((everything as Record<string, unknown>)[name], name).toBe(value);
  });

  it('the webhook signature helpers are the same in countersign and countersign/server; the server is not in countersign', () => {
    expect(everything.verifySignature).toBe(server.verifySignature);
    expect(everything.signPayload).toBe(server.signPayload);
    expect('createServer' in everything).toBe(false);
    expect('startServer' in everything).toBe(false);
  });
});
