import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.ts';

/*
 * Runs the shell examples of README.md and docs/cli.md against a fresh SQLite store and
 * compares the shape of their output, so an example that drifts from what the CLI prints
 * fails CI. The generated `--help` blocks are left to test/cli/cli-reference.test.ts.
 */

const root = resolve(import.meta.dirname, '..');

interface Doc {
  file: string;
  /** One store for the whole document (its examples build on each other), or one per block. */
  store: 'per-document' | 'per-block';
  /**
   * Commands run before a block (keyed by its first command) to build the state it shows,
   * written as in the docs (env prefixes and the block's example ids work). `fresh` starts a
   * new store there, which the document's later blocks then share; `env` holds from there on.
   */
  setup?: Record<string, { fresh?: boolean; env?: Record<string, string>; commands: string[] }>;
}

const raiseCancel = 'countersign chat demo "Please cancel my order 1044." --user c-100 --as sam';

const docs: Doc[] = [
  {
    file: 'README.md',
    store: 'per-block',
    // The README's terminal blocks follow the console chat, which needs a TTY; the same
    // request is raised non-interactively, by sam as in the README.
    setup: {
      'npx countersign approve apr_jbmegrbg4zrgkhssx4hlwz2via6kelzw': { commands: [raiseCancel] },
      'npx countersign pending': { commands: [raiseCancel] },
    },
  },
  {
    file: 'docs/cli.md',
    store: 'per-document',
    setup: {
      // A request to reject, on a session of its own (s1's was approved just before).
      'countersign reject apr_vhqod3gsmv5mb4agjpaff5wkfz4c4k5r': {
        commands: ['countersign chat s2 "Please cancel my order 1044." --user c-100 --as backend'],
      },
      // A second eggs request on session k, in a fresh kitchen store (the list of 2 items).
      'COUNTERSIGN_APP=kitchen countersign approve apr_kh6tnn5ngozt2lqpn6dy7mhezhi5kgg5 --always --as alice':
        {
          fresh: true,
          commands: [
            'COUNTERSIGN_APP=kitchen countersign chat k "We\'re out of eggs, put a dozen on the list."',
          ],
        },
      // The session examples export s4, a session with one waiting request, signed.
      'countersign session export s4 --out s4.json': {
        fresh: true,
        env: { COUNTERSIGN_EXPORT_KEY: '2026-12:docs-example-secret-docs-example-secret' },
        commands: ['countersign chat s4 "Please cancel my order 1044." --user c-100 --as backend'],
      },
      // Claims: a cancel waiting on a session of its own.
      'countersign claim apr_g4qeppbmvdnqyt27ggsslpojcvv2yo6a --as alice --for 30m': {
        commands: ['countersign chat sd "Please cancel my order 1044." --user c-100 --as backend'],
      },
      // Erasing c-100: a waiting cancel and a status question of theirs, and c-200's session.
      'countersign erase --principal c-100 --as dpo': {
        fresh: true,
        commands: [
          'countersign chat s1 "Please cancel my order 1044." --user c-100 --as backend',
          'countersign chat s2 "What\'s the status of order 1043?" --user c-100 --as backend',
          'countersign chat s3 "What\'s the status of order 1045?" --user c-200 --as backend',
        ],
      },
      // Purging: one session waits on a request, one has finished.
      'COUNTERSIGN_RETENTION=sessions=1ms,runs=1ms,requests=1ms countersign purge --dry-run': {
        fresh: true,
        commands: [
          'countersign chat s1 "Please cancel my order 1044." --user c-100 --as backend',
          'countersign chat s2 "What\'s the status of order 1045?" --user c-200 --as backend',
        ],
      },
      // Rotation: a store written under k1, rotated with k2 first (both fixed test keys).
      'countersign keys rotate --as dana': {
        fresh: true,
        env: {
          COUNTERSIGN_ENCRYPTION_KEYS: `k2:${Buffer.alloc(32, 2).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}`,
        },
        commands: [
          `COUNTERSIGN_ENCRYPTION_KEYS=k1:${Buffer.alloc(32, 1).toString('base64')} countersign chat r1 "Please cancel my order 1044." --user c-100 --as backend`,
        ],
      },
      // The audit excerpt is the trail of one approved cancel in a store of its own.
      'countersign audit': {
        fresh: true,
        commands: [
          'countersign chat s1 "Please cancel my order 1044." --user c-100 --as backend',
          'countersign approve apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice',
        ],
      },
    },
  },
];

/**
 * Examples not run, each with why. Keyed by file and the command as written after `$ `.
 * Every entry must still match an example (a stale entry fails), and the number of examples
 * run may not drop below MIN_RUN: do not grow this list to make a drifted example pass.
 * `output` (the first documented line) or `nth` (which occurrences in the file, from 1) tell
 * apart examples of the same command.
 */
const skip: { file: string; command: string; output?: string; nth?: number[]; reason: string }[] = [
  {
    file: 'docs/cli.md',
    command: 'countersign show apr_vhqod3gsmv5mb4agjpaff5wkfz4c4k5r --json',
    reason: 'shows a request the document only rejects later (the reject example)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign show apr_lgiehmrbswzdqiuq73b4jrjzuuze7spx',
    reason: 'needs a request answered "moved on" from the interactive console (stdin)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign resume a',
    reason: 'needs a session whose request expired (a clock 24 hours on)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign expire',
    reason: 'needs overdue requests (a clock 24 hours on)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign audit',
    nth: [2],
    reason: 'the trail after the skipped forged import',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign audit --verify',
    nth: [2],
    reason: 'needs a damaged SQLite file',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign audit --verify --json',
    nth: [3],
    reason: 'after DELETE FROM audit on a store of 5 requests (the counts and ids are of that store)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign audit --verify          # after: DELETE FROM audit',
    reason: 'the counts and ids are of a store of 5 requests, which the test does not build',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign audit --verify          # after: deleting the last 2 entries',
    reason: 'the counts and ids are of a store of 5 requests, which the test does not build',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign session import forged.json --trust-unsigned',
    reason: 'needs a hand-forged export file',
  },
  { file: 'docs/cli.md', command: 'countersign resume s4', reason: 'continues the skipped forged import' },
  {
    file: 'docs/cli.md',
    command: 'countersign executions',
    output: 'No executions yet.',
    reason: 'the "No executions yet." after the forged import (the earlier executions example runs)',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign session import pathlike.json --trust-unsigned --json',
    reason: 'needs a hand-made export file',
  },
  {
    file: 'docs/cli.md',
    command: 'countersign session import stranger.json --trust-unsigned --json',
    reason: 'needs an export of another app',
  },
];

/**
 * Today 60 examples run and 14 are skipped. Fewer run, or more skipped, means the skip list
 * grew or the docs lost examples: raise MIN_RUN when you add examples, never lower it quietly.
 */
const MIN_RUN = 60;
const MAX_SKIPPED = 14;

interface Example {
  file: string;
  block: number;
  /** The command as written after `$ `. */
  command: string;
  expected: string[];
}

/** The ```text blocks outside the generated regions, as their `$ countersign …` examples. */
function parseExamples(file: string): Example[][] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Example[][] = [];
  let generated = false;
  let current: Example[] | undefined;
  lines.forEach((line, index) => {
    if (line.startsWith('<!-- generated from the command table')) generated = true;
    else if (line.startsWith('<!-- end of generated text')) generated = false;
    if (current === undefined) {
      if (line === '```text' && !generated) current = [];
      return;
    }
    if (line.startsWith('```')) {
      if (current.length > 0) blocks.push(current);
      current = undefined;
      return;
    }
    if (line.startsWith('$ ')) current.push({ file, block: index, command: line.slice(2), expected: [] });
    else current.at(-1)?.expected.push(line);
  });
  return blocks;
}

/** Shell words with '…' and "…" quoting: enough for the docs' examples. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === "'" || ch === '"') {
      const end = text.indexOf(ch, i + 1);
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (ch === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (ch === '#' && word === undefined) break;
    else word = (word ?? '') + ch;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Splits `A=1 B=2 [npx] countersign args…`; undefined when the line runs something else. */
function parseCommand(
  command: string,
): { env: Record<string, string>; args: string[]; exportEnv?: boolean } | undefined {
  const words = shellWords(command);
  if (words[0] === 'export') {
    const env = Object.fromEntries(
      words.slice(1).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
    );
    return { env, args: [], exportEnv: true };
  }
  const env: Record<string, string> = {};
  while (words[0] !== undefined && /^[A-Z_]+=/.test(words[0])) {
    const w = words.shift() as string;
    env[w.slice(0, w.indexOf('='))] = w.slice(w.indexOf('=') + 1);
  }
  if (words[0] === 'npx') words.shift();
  if (words[0] !== 'countersign') return undefined;
  return { env, args: words.slice(1) };
}

const ID = /\b(apr|req|cp|rule)_[a-z2-7]{32}\b/g;

function normalise(text: string, tmp: string): string {
  return text
    .replaceAll(`${tmp}/`, '') // the docs' relative files (s4.json) run in the store's folder
    .replaceAll(tmp, '<TMP>')
    .replace(/\b\d+ bytes\b/g, '<N> bytes')
    .replace(ID, '$1_<ID>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<TIME>')
    .replace(/\b\d+h \d+m\b/g, '<DURATION>')
    .replace(/\b[0-9a-f]{64}\b/g, '<HASH>');
}

/** `…` in a documented line matches anything; a line of only `…` matches any lines. */
function linesMatch(expected: string[], actual: string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  const [first, ...rest] = expected as [string, ...string[]];
  if (first.trim() === '…') {
    for (let skipCount = 0; skipCount <= actual.length; skipCount++)
      if (linesMatch(rest, actual.slice(skipCount))) return true;
    return false;
  }
  if (actual.length === 0) return false;
  const pattern = new RegExp(
    `^${first
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return pattern.test(actual[0] as string) && linesMatch(rest, actual.slice(1));
}

/**
 * The key shape of a JSON value: objects by their keys (recursively), arrays by their
 * elements' shapes; scalar values are not compared. `partial` lets the actual value carry
 * keys the documented one leaves out with `…`.
 */
function jsonShapeDiffers(
  expected: unknown,
  actual: unknown,
  partial: boolean,
  at = '$',
): string | undefined {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected an array`;
    if (expected.length === 0) return partial || actual.length === 0 ? undefined : `${at}: expected []`;
    if (!partial && expected.length !== actual.length) return `${at}: expected ${expected.length} elements`;
    for (let i = 0; i < expected.length; i++) {
      const differs = jsonShapeDiffers(expected[i], actual[i], partial, `${at}[${i}]`);
      if (differs) return differs;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${at}: expected an object`;
    const want = Object.keys(expected);
    const have = Object.keys(actual);
    for (const key of want) if (!have.includes(key)) return `${at}.${key}: missing`;
    if (!partial) for (const key of have) if (!want.includes(key)) return `${at}.${key}: not in the docs`;
    for (const key of want) {
      const differs = jsonShapeDiffers(
        (expected as Record<string, unknown>)[key],
        (actual as Record<string, unknown>)[key],
        partial,
        `${at}.${key}`,
      );
      if (differs) return differs;
    }
    return undefined;
  }
  return actual !== null && typeof actual === 'object' ? `${at}: expected a scalar` : undefined;
}

/** The documented JSON, with `, …` and `[…]` abbreviations read as "and more". */
function parseDocumentedJson(text: string): { value: unknown; partial: boolean } | undefined {
  const partial = text.includes('…');
  const cleaned = partial ? text.replace(/,\s*…/g, '').replace(/\[…\]/g, '[]') : text;
  try {
    return { value: JSON.parse(cleaned), partial };
  } catch {
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Pairs the doc's example ids with the real ones printed, in order of appearance. */
function learnIds(ids: Map<string, string>, expected: string, actual: string): void {
  const documented = [...new Set(expected.match(ID) ?? [])];
  const real = [...new Set(actual.match(ID) ?? [])];
  documented.forEach((id, i) => {
    const realId = real[i];
    if (!ids.has(id) && realId !== undefined && realId.slice(0, 3) === id.slice(0, 3)) ids.set(id, realId);
  });
}

/** The docs' relative files (s4.json, sqlite:other.sqlite) live in the store's temp folder. */
function inFolder(args: string[], dir: string): string[] {
  return args.map((arg) => (/^[\w-]+\.json$/.test(arg) ? join(dir, arg) : arg));
}

function inFolderEnv(env: Record<string, string>, dir: string): Record<string, string> {
  const store = env.COUNTERSIGN_STORE;
  if (store === undefined) return env;
  return { ...env, COUNTERSIGN_STORE: store.replace(/^sqlite:(?!\/)/, `sqlite:${dir}/`) };
}

function tempStore(): { dir: string; store: string } {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-docs-'));
  return { dir, store: `sqlite:${join(dir, 'countersign.db')}` };
}

const baseEnv = { COUNTERSIGN_APPROVER: 'sam', USER: 'sam', TZ: 'UTC' };
const ran: string[] = [];
const skipsUsed = new Set<number>();
/** How often each command has come up so far, for `nth` in the skip list. */
const seen = new Map<string, number>();

for (const doc of docs) {
  describe(doc.file, () => {
    const blocks = parseExamples(doc.file);
    let shared = tempStore();
    let ids = new Map<string, string>();
    let docEnv: Record<string, string> = {};

    for (const block of blocks) {
      const first = block[0] as Example;
      it(`the example at line ${first.block + 1}: ${first.command}`, { timeout: 30_000 }, async () => {
        if (doc.store === 'per-block') {
          shared = tempStore();
          ids = new Map();
        }
        let blockEnv: Record<string, string> = {};
        const env = () => ({ ...baseEnv, COUNTERSIGN_STORE: shared.store, ...docEnv, ...blockEnv });
        const setup = doc.setup?.[first.command];
        if (setup?.fresh) {
          shared = tempStore();
          ids = new Map();
        }
        docEnv = { ...docEnv, ...setup?.env };
        for (const line of setup?.commands ?? []) {
          const parsed = parseCommand(line);
          if (parsed === undefined) throw new Error(`setup is not a countersign command: ${line}`);
          const args = parsed.args.map((arg) => arg.replace(ID, (id) => ids.get(id) ?? id));
          const run = await runCli(inFolder(args, shared.dir), {
            ...env(),
            ...inFolderEnv(parsed.env, shared.dir),
          });
          expect(run.code, `setup ${line}: ${run.stderr}`).toBe(0);
          const documented = block.map((e) => `${e.command}\n${e.expected.join('\n')}`).join('\n');
          learnIds(ids, documented, run.stdout);
        }
        for (const example of block) {
          const seenKey = `${doc.file}\n${example.command}`;
          const occurrence = (seen.get(seenKey) ?? 0) + 1;
          seen.set(seenKey, occurrence);
          const skipIndex = skip.findIndex(
            (s) =>
              s.file === doc.file &&
              s.command === example.command &&
              (s.output === undefined || s.output === example.expected[0]) &&
              (s.nth === undefined || s.nth.includes(occurrence)),
          );
          if (skipIndex >= 0) {
            skipsUsed.add(skipIndex);
            continue;
          }
          // `# after: UPDATE …` documents a store edited by hand first: edit it the same way.
          const edit = /#\s*after:\s*((?:UPDATE|DELETE)\b.*)$/.exec(example.command)?.[1];
          if (edit !== undefined) {
            const db = new DatabaseSync(shared.store.slice('sqlite:'.length));
            db.exec(edit);
            db.close();
          }
          const parsed = parseCommand(example.command);
          if (parsed === undefined) continue; // a comment, or another program (sqlite3)
          if (parsed.exportEnv) {
            blockEnv = { ...blockEnv, ...parsed.env };
            continue;
          }
          const args = parsed.args.map((arg) => arg.replace(ID, (id) => ids.get(id) ?? id));
          const run = await runCli(inFolder(args, shared.dir), {
            ...env(),
            ...inFolderEnv(parsed.env, shared.dir),
          });
          ran.push(`${doc.file}: ${example.command}`);
          const label = `${doc.file}:${example.block + 1} $ ${example.command}`;
          const exit =
            example.expected.length === 1 && /^\[exit (\d+): .*\]$/.exec(example.expected[0] as string);
          if (exit) {
            // An annotated crash: the exit status is the output.
            expect(run.code ?? (run.signal ? 137 : null), label).toBe(Number(exit[1]));
            continue;
          }
          const output = (run.stdout + run.stderr).replace(/\n$/, '');
          learnIds(ids, example.expected.join('\n'), output);
          const documentedJson = parseDocumentedJson(example.expected.join('\n'));
          const actualJson = parseJson(output);
          if (documentedJson !== undefined && actualJson !== undefined) {
            expect(
              jsonShapeDiffers(documentedJson.value, actualJson, documentedJson.partial),
              `${label}\n${output}`,
            ).toBe(undefined);
            continue;
          }
          const want = normalise(example.expected.join('\n'), shared.dir).split('\n');
          const have = normalise(output, shared.dir).split('\n');
          expect(
            linesMatch(want, have),
            `${label}\ndocumented:\n${want.join('\n')}\nprinted:\n${have.join('\n')}`,
          ).toBe(true);
        }
      });
    }
  });
}

describe('the docs examples', () => {
  it('run enough of them, and the skip list names only examples that exist', () => {
    expect(ran.length).toBeGreaterThanOrEqual(MIN_RUN);
    expect(skip.length).toBeLessThanOrEqual(MAX_SKIPPED);
    const stale = skip.filter((_, index) => !skipsUsed.has(index));
    expect(stale, 'skip entries that match no example').toEqual([]);
  });
});
