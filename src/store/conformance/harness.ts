import { describe as vitestDescribe, it as vitestIt } from 'vitest';

/**
 * Tests a backend says it does not support, by full name below the suite's title
 * (`'leases > a lapsed lease can be taken over'`), with the reason in words. hono's router
 * tests take the same shape: `runTest({ skip: [{ reason, tests: [...] }] })`.
 */
export interface SkipEntry {
  reason: string;
  tests: readonly string[];
}

/** The name separator in skip entries: describe blocks and the test name joined by it. */
export const NAME_SEPARATOR = ' > ';

/** Appended to the name of a skipped test, so the report says why it did not run. */
export function skippedName(name: string, reason: string): string {
  return `${name} [skipped: ${reason}]`;
}

interface Collecting {
  readonly path: readonly string[];
  readonly skips: ReadonlyMap<string, string>;
  readonly matched: Set<string>;
}

// Set only while a describe body of a kit suite runs. vitest collects nested describe
// bodies after their parent's returns, so every wrapped body re-installs its own path.
let collecting: Collecting | undefined;

function within(run: Collecting, body: () => void): void {
  const outer = collecting;
  collecting = run;
  try {
    const result: unknown = body();
    if (result instanceof Promise)
      throw new Error('countersign/testing: a describe body of the conformance cases must not be async.');
  } finally {
    collecting = outer;
  }
}

/** vitest's `describe`, recording the path so `it` can match skip entries by full name. */
export function describe(name: string, body: () => void): void {
  const run = collecting;
  if (run === undefined) {
    vitestDescribe(name, body);
    return;
  }
  const inner: Collecting = { ...run, path: [...run.path, name] };
  vitestDescribe(name, () => within(inner, body));
}

/** vitest's `it`, or `it.skip` with the reason appended when the backend skips this test. */
export function it(name: string, fn: () => unknown, timeoutMs?: number): void {
  const run = collecting;
  const full = run === undefined ? name : [...run.path, name].join(NAME_SEPARATOR);
  const reason = run?.skips.get(full);
  if (run === undefined || reason === undefined) {
    vitestIt(name, fn, timeoutMs);
    return;
  }
  run.matched.add(full);
  vitestIt.skip(skippedName(name, reason), fn, timeoutMs);
}

function skipMap(skip: readonly SkipEntry[]): Map<string, string> {
  const skips = new Map<string, string>();
  for (const entry of skip) {
    if (entry.reason.trim() === '')
      throw new Error(`countersign/testing: a skip entry needs a reason (tests: ${entry.tests.join(', ')}).`);
    for (const test of entry.tests) {
      if (skips.has(test)) throw new Error(`countersign/testing: "${test}" is skipped twice.`);
      skips.set(test, entry.reason);
    }
  }
  return skips;
}

/**
 * One suite of the kit: `title` around `body`, with `skip` applied to the tests `body`
 * defines through this module's `describe`/`it`. A skip naming no test fails the suite's
 * last test, so a typo or a renamed case cannot quietly stop skipping (or start running).
 */
export function describeSuite(title: string, skip: readonly SkipEntry[], body: () => void): void {
  const run: Collecting = { path: [], skips: skipMap(skip), matched: new Set() };
  vitestDescribe(title, () => within(run, body));
  if (run.skips.size === 0) return;
  // Beside the suite, not in it: it runs after the suite's tests, without the suite's hooks
  // (no store is opened for it), once every describe body has been collected.
  vitestIt(`${title}: every skipped test name names a test of the suite`, () => {
    const unknown = [...run.skips.keys()].filter((test) => !run.matched.has(test));
    if (unknown.length > 0)
      throw new Error(
        `countersign/testing: skip entries name no test of "${title}": ${unknown.map((test) => JSON.stringify(test)).join(', ')}. ` +
          `Names are the describe blocks and the test joined by "${NAME_SEPARATOR}", as the report prints them below the suite title.`,
      );
  });
}
