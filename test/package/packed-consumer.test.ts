import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagesLoaded } from '../helpers/loaded-packages.ts';

const root = resolve(import.meta.dirname, '../..');
const bin = (name: string) => join(root, 'node_modules/.bin', name);

/** The README's library section: its package.json, tsconfig.json and example, as printed. */
function readmeLibrarySection(): { packageJson: string; tsconfig: string; example: string } {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use it as a library'), readme.indexOf('## Documentation'));
  const blocks = [...section.matchAll(/```(json|ts)\n([\s\S]*?)```/g)].map((match) => match[2] ?? '');
  const [packageJson, tsconfig, example] = blocks;
  if (packageJson === undefined || tsconfig === undefined || example === undefined)
    throw new Error('The README library section lost one of its code blocks.');
  return { packageJson, tsconfig, example };
}

/**
 * Installs the tarball offline: the package unpacked, its production dependencies linked
 * from this checkout (no network, no @types the consumer did not ask for).
 */
function installOffline(consumer: string, tarball: string): void {
  const target = join(consumer, 'node_modules/countersign');
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', target, '--strip-components=1']);
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
  });
  const names = new Set<string>();
  for (const line of listed.stdout.split('\n')) {
    const parts = relative(root, line).split('/');
    if (parts[0] !== 'node_modules' || !parts[1]) continue;
    names.add(parts[1].startsWith('@') ? `${parts[1]}/${parts[2]}` : parts[1]);
  }
  for (const name of names) {
    const link = join(consumer, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), link);
  }
}

/** Builds and packs the package once, as `npm publish` would (prepack builds dist/ first). */
function pack(): { work: string; tarball: string } {
  const work = mkdtempSync(join(tmpdir(), 'countersign-pack-'));
  const packed = spawnSync('npm', ['pack', '--pack-destination', work, '--json'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(packed.status, packed.stderr).toBe(0);
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [
    { filename: string },
  ];
  return { work, tarball: join(work, filename) };
}

/** Links a package of this checkout's node_modules into the consumer (a dev dependency it asked for). */
function linkDev(consumer: string, name: string): void {
  const link = join(consumer, 'node_modules', name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(join(root, 'node_modules', name), link);
}

/**
 * docs/api.md's "Testing a backend" example, as printed: a third-party backend (the memory
 * store in a class) and its test file, each a ts block opening with `// FILENAME`.
 */
function docsBackendExample(): { store: string; test: string } {
  const api = readFileSync(join(root, 'docs/api.md'), 'utf8');
  const section = api.slice(api.indexOf('## Testing a backend: countersign/testing'));
  const block = (name: string) => {
    const found = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].find((match) =>
      match[1]?.startsWith(`// ${name}\n`),
    );
    if (found?.[1] === undefined) throw new Error(`docs/api.md lost its ${name} example.`);
    return found[1];
  };
  return { store: block('counting-store.ts'), test: block('counting-store.test.ts') };
}

/** The other entries, imported by name and by type. */
const OTHER_ENTRIES = `import { createAgent, createDemoModel, createMemoryStore } from 'countersign';
import { createPgBossQueue, createPostgresStore, type PostgresStore } from 'countersign/postgres';
import { createServer, type ServerOptions, startServer } from 'countersign/server';

const agent = createAgent({ name: 'desk', instructions: 'You help.', tools: [], model: createDemoModel() });
const options: ServerOptions = { agents: [agent], store: createMemoryStore(), watchIntervalMs: 0 };
const server = createServer(options);
const health = await server.app.request('/healthz');
await server.close();
const opened: (url: string) => Promise<PostgresStore> = (url) => createPostgresStore({ connectionString: url });
console.log(health.status, typeof startServer, typeof opened, typeof createPgBossQueue);
`;

describe('the published package, as a consumer gets it', () => {
  let packed: { work: string; tarball: string } | undefined;
  const tarball = () => {
    packed ??= pack();
    return packed;
  };

  it('packs, type-checks the README example under strict without skipLibCheck, and runs it', () => {
    const { work, tarball: file } = tarball();
    const consumer = join(work, 'consumer');
    mkdirSync(consumer);
    const { packageJson, tsconfig, example } = readmeLibrarySection();
    writeFileSync(join(consumer, 'package.json'), packageJson);
    writeFileSync(join(consumer, 'tsconfig.json'), tsconfig);
    writeFileSync(join(consumer, 'refund-desk.ts'), example);
    installOffline(consumer, file);

    const checked = spawnSync(bin('tsc'), ['-p', '.'], { cwd: consumer, encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
    // The README's tsconfig leaves skipLibCheck off, so the check above read every .d.ts.
    expect(JSON.parse(tsconfig).compilerOptions.skipLibCheck).toBeUndefined();

    const run = spawnSync(bin('node'), ['refund-desk.ts'], { cwd: consumer, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('awaiting_approval cancel_order { orderId: 1044 }');
    expect(run.stdout).toMatch(/completed — .*Order 1044 cancelled \(key countersign:apr_[a-z2-7]{32}\)/);

    // The compiled entry, as installed, loads neither the HTTP server nor pg.
    const loaded = packagesLoaded('countersign', '', { cwd: consumer });
    expect(loaded).toContain('zod');
    expect(
      loaded.filter((name) => ['hono', '@hono/node-server', 'pg', 'pg-boss', 'vitest'].includes(name)),
    ).toEqual([]);
  }, 300_000);

  it('a third-party backend passes countersign/testing under vitest; the server and postgres entries import and type-check', () => {
    const { work, tarball: file } = tarball();
    const consumer = join(work, 'backend');
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, 'package.json'),
      JSON.stringify({
        type: 'module',
        dependencies: { countersign: '^0.1.0' },
        devDependencies: { vitest: '^4.0.0' },
      }),
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2023',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
        },
        include: ['*.ts'],
      }),
    );
    const example = docsBackendExample();
    writeFileSync(join(consumer, 'counting-store.ts'), example.store);
    writeFileSync(join(consumer, 'counting-store.test.ts'), example.test);
    writeFileSync(join(consumer, 'entries.ts'), OTHER_ENTRIES);
    installOffline(consumer, file);
    linkDev(consumer, 'vitest');

    // strict, no skipLibCheck, no @types/node: every .d.ts of the four entries is read.
    const checked = spawnSync(bin('tsc'), ['-p', '.'], { cwd: consumer, encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);

    const entries = spawnSync(bin('node'), ['entries.ts'], { cwd: consumer, encoding: 'utf8' });
    expect(entries.status, entries.stderr).toBe(0);
    expect(entries.stdout.trim()).toBe('200 function function function');

    const report = join(work, 'backend-report.json');
    const tested = spawnSync(
      bin('node'),
      [join(consumer, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=json', `--outputFile=${report}`],
      { cwd: consumer, encoding: 'utf8', env: { ...process.env, CI: 'true' } },
    );
    expect(tested.status, tested.stdout + tested.stderr).toBe(0);
    const results = (
      JSON.parse(readFileSync(report, 'utf8')) as {
        testResults: Array<{ assertionResults: Array<{ title: string; status: string }> }>;
      }
    ).testResults.flatMap((result) => result.assertionResults);
    const titles = (status: string) =>
      results.filter((result) => result.status === status).map((result) => result.title);
    expect(titles('failed')).toEqual([]);
    expect(titles('skipped')).toEqual(['hands out copies [skipped: shown skipped on purpose]']);
    expect(titles('passed').length).toBeGreaterThan(100);
  }, 300_000);

  it('the README example is examples/library/refund-desk.ts with the package name', () => {
    const file = readFileSync(join(root, 'examples/library/refund-desk.ts'), 'utf8');
    expect(readmeLibrarySection().example).toBe(file.replace("'../../src/index.ts'", "'countersign'"));
  });
});
