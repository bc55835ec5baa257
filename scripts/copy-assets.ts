// After `tsc -p tsconfig.build.json`: copy the files the compiled code reads at run time
// (SQL migrations, the inbox's CSS and scripts) next to it in dist/.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const wanted = /\.(sql|css|js)$/;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

let copied = 0;
for (const file of walk(join(root, 'src'))) {
  if (!wanted.test(file)) continue;
  const target = join(root, 'dist', relative(root, file));
  cpSync(file, target);
  copied += 1;
}
console.log(
  `copied ${copied} asset file(s) into dist/ (${dirname(relative(root, join(root, 'dist', 'src')))})`,
);
