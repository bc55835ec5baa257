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
const here = fileURLToPath(import.meta.url);
// Node keeps the compiled (and type-stripped) code of every module it loads in a cache on
// disk: the second and later runs of a command skip most of the start-up (docs/cli.md#start-up-time).
// The cache goes in node_modules/.cache (the checkout's, or the installing project's), owned
// by whoever installed, not in the shared temp directory where another user could plant
// code. NODE_COMPILE_CACHE still chooses, NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const cacheDir = here.includes('/node_modules/')
  ? new URL('../../.cache/countersign', import.meta.url)
  : new URL('../node_modules/.cache/countersign', import.meta.url);
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE || fileURLToPath(cacheDir));
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
if (here.includes('/node_modules/') && existsSync(fileURLToPath(compiled))) {
  await import(compiled.href);
} else {
  if (!process.features.typescript) rerun(process.execPath, ['--experimental-strip-types', '--no-warnings']);
  await import('../src/cli/main.ts');
}
