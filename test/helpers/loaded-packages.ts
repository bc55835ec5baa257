import { spawnSync } from 'node:child_process';

/**
 * The packages (by name, from the node_modules path they resolved to) a fresh Node process
 * loaded while importing `entry` as `cs` and running `body`. A `module.registerHooks`
 * resolve hook sees every import and every require, including those inside dependencies,
 * so a package that is loaded at all shows up here.
 */
export function packagesLoaded(entry: string, body = '', options: { cwd?: string } = {}): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = new Set();
    registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); urls.add(found.url); return found; } });
    const cs = await import(process.argv[1]);
    ${body}
    const names = [...urls].flatMap((url) => {
      const match = /.*\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(url);
      return match ? [match[1]] : [];
    });
    console.log(JSON.stringify([...new Set(names)].sort()));
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, entry], {
    encoding: 'utf8',
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  if (run.status !== 0) throw new Error(`loading ${entry} failed: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
}
