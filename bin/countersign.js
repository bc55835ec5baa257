#!/usr/bin/env node
// Runs the TypeScript sources directly (Node's built-in type stripping, no build step).
// Node older than 22.13 has neither that nor node:sqlite: re-run with the Node that the
// checkout pins (the `node` devDependency) when it is there.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  const pinned = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (existsSync(pinned)) {
    const run = spawnSync(pinned, process.argv.slice(1), { stdio: 'inherit' });
    process.exit(run.status ?? 1);
  }
  process.stderr.write(`countersign needs Node.js 22.13 or newer (this is ${process.versions.node}).\n`);
  process.exit(1);
}
await import('../src/cli/main.ts');
