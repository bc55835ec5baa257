#!/usr/bin/env node
// In a checkout this runs the TypeScript sources directly with Node's built-in type
// stripping (no build step). An installed package runs the compiled dist/ instead: Node
// does not strip types under node_modules.
// Node older than 22.13 has neither type stripping nor node:sqlite: re-run with the Node
// that a checkout pins (the `node` devDependency) when it is there. Node 22.13–22.17 strips
// types only behind a flag: re-run with it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
const rerun = (node, flags) => {
  const run = spawnSync(node, [...flags, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
};
if (major < 22 || (major === 22 && minor < 13)) {
  const pinned = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (existsSync(pinned)) rerun(pinned, []);
  process.stderr.write(`countersign needs Node.js 22.13 or newer (this is ${process.versions.node}).\n`);
  process.exit(1);
}
// Node keeps the compiled (and type-stripped) code of every module it loads in a cache on
// disk (in the system's temp directory unless NODE_COMPILE_CACHE says where): the second and
// later runs of a command skip most of the start-up. See docs/cli.md#start-up-time.
module.enableCompileCache?.();
const here = fileURLToPath(import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
if (here.includes('/node_modules/') && existsSync(fileURLToPath(compiled))) {
  await import(compiled.href);
} else {
  if (!process.features.typescript) rerun(process.execPath, ['--experimental-strip-types', '--no-warnings']);
  await import('../src/cli/main.ts');
}
