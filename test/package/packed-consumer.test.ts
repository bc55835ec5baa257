import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

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

describe('the published package, as a consumer gets it', () => {
  it('packs, type-checks the README example under strict without skipLibCheck, and runs it', () => {
    const work = mkdtempSync(join(tmpdir(), 'countersign-pack-'));
    // prepack builds dist/ first, exactly as `npm publish` would.
    const packed = spawnSync('npm', ['pack', '--pack-destination', work, '--json'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(packed.status, packed.stderr).toBe(0);
    const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [
      { filename: string },
    ];
    const consumer = join(work, 'consumer');
    mkdirSync(consumer);
    const { packageJson, tsconfig, example } = readmeLibrarySection();
    writeFileSync(join(consumer, 'package.json'), packageJson);
    writeFileSync(join(consumer, 'tsconfig.json'), tsconfig);
    writeFileSync(join(consumer, 'refund-desk.ts'), example);
    installOffline(consumer, join(work, filename));

    const checked = spawnSync(bin('tsc'), ['-p', '.'], { cwd: consumer, encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
    // The README's tsconfig leaves skipLibCheck off, so the check above read every .d.ts.
    expect(JSON.parse(tsconfig).compilerOptions.skipLibCheck).toBeUndefined();

    const run = spawnSync(bin('node'), ['refund-desk.ts'], { cwd: consumer, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('awaiting_approval cancel_order { orderId: 1044 }');
    expect(run.stdout).toMatch(/completed — .*Order 1044 cancelled \(key countersign:apr_[a-z2-7]{32}\)/);
  }, 300_000);

  it('the README example is examples/library/refund-desk.ts with the package name', () => {
    const file = readFileSync(join(root, 'examples/library/refund-desk.ts'), 'utf8');
    expect(readmeLibrarySection().example).toBe(file.replace("'../../src/index.ts'", "'countersign'"));
  });
});
