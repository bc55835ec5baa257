import { afterAll, describe, expect, it } from 'vitest';
import { cutProxy } from '../helpers/cut-proxy.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl, TEST_PG_URL } from '../helpers/postgres.ts';
import { startWorker, type WorkerLine, type WorkerProcess } from '../helpers/worker-process.ts';

const pg = await postgresForTests();

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Two `countersign worker` processes (one `--json`, one as a person runs it) whose PostgreSQL
 * goes away — every connection through a proxy, closed at once while it is down — and comes
 * back. Their takeover watch looks five times a second and fails at every look meanwhile: each
 * prints one line when it starts failing and one when it works again, not a line per look,
 * and the text one prints words, never raw JSON.
 */
describe.skipIf(pg === null)('worker on PostgreSQL: its takeover watch while the server is down', () => {
  const schema = freshSchema('worker_takeover_outage');
  const workers: WorkerProcess[] = [];
  let proxy: Awaited<ReturnType<typeof cutProxy>> | undefined;
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await proxy?.close();
    await dropSchema(schema);
    await dropSchema(`${schema}_queue`);
  });

  it('logs one takeover-failed line while it fails, then takeover-recovered with how long and how many looks', async () => {
    const target = new URL(TEST_PG_URL);
    proxy = await cutProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = new URL(storeUrl(schema));
    proxied.host = new URL(proxy.url).host;
    const env = {
      COUNTERSIGN_STORE: proxied.toString(),
      COUNTERSIGN_MODEL: 'demo',
      COUNTERSIGN_APP: 'bookstore',
      COUNTERSIGN_WORKER_SWEEP_MS: '0',
      COUNTERSIGN_WORKER_TAKEOVER_MS: '200',
    };
    // One first, so the two do not race to create the queue's schema.
    const json = startWorker(env);
    workers.push(json);
    await json.waitFor((line) => line.event === 'ready');
    const text = startWorker(env, [], undefined, 'text');
    workers.push(text);
    await text.waitFor((line) => /^Worker \d+ ready/.test(String(line.text)));

    proxy.refuse();
    const failed = await json.waitFor((line) => line.event === 'takeover-failed', 10_000);
    await text.waitFor((line) => /^Cannot look for sessions of dead workers/.test(String(line.text)), 10_000);
    // Down for a while more: enough refused connections (the lock retries, pg-boss, the
    // takeover looks of both) for dozens of looks each.
    const refusedAtFirstLine = proxy.refused();
    await until(() => proxy!.refused() >= refusedAtFirstLine + 250, 60_000, 'refused connections');
    proxy.release();

    const recovered = await json.waitFor((line) => line.event === 'takeover-recovered', 20_000);
    const textRecovered = await text.waitFor(
      (line) => /^Looking for sessions of dead workers again after/.test(String(line.text)),
      20_000,
    );
    const strip = ({ at: _at, ...line }: WorkerLine) => line;
    const takeover = json.lines.filter((line) => line.event.startsWith('takeover')).map(strip);
    console.info(
      `worker --json printed (refused ${proxy.refused()} connections):\n${json.lines
        .map((line) => JSON.stringify(line))
        .join('\n')}\nworker printed:\n${text.lines.map((line) => line.text).join('\n')}`,
    );

    // The outage was shorter than the first reminder (30 s): one line, then the recovery.
    expect(recovered.failedMs).toEqual(expect.any(Number));
    expect(recovered.failedMs as number).toBeLessThan(30_000);
    expect(takeover).toEqual([
      { event: 'takeover-failed', message: failed.message },
      { event: 'takeover-recovered', failedMs: recovered.failedMs, attempts: recovered.attempts },
    ]);
    expect(failed.message).toEqual(expect.stringMatching(/\S/));
    // Dozens of looks failed meanwhile, each of which used to print its own line.
    expect(recovered.attempts as number).toBeGreaterThanOrEqual(20);

    // The text worker: the same two lines in words, and nothing printed as raw JSON.
    expect(text.lines.filter((line) => line.event !== 'text')).toEqual([]);
    const textTakeover = text.lines.filter((line) => /sessions of dead workers/.test(String(line.text)));
    expect(textTakeover).toHaveLength(2);
    expect(textTakeover[0]!.text).toMatch(
      /^Cannot look for sessions of dead workers \(.+\)\. Until it can, this worker takes over no session whose worker died; it keeps trying and will say when it can again\.$/,
    );
    expect(textRecovered.text).toMatch(
      /^Looking for sessions of dead workers again after [\d.]+ m?s \((\d+) failed attempts\): this worker takes them over again\.$/,
    );
    const textAttempts = Number(/\((\d+) failed attempts\)/.exec(String(textRecovered.text))?.[1]);
    expect(textAttempts).toBeGreaterThanOrEqual(20);

    // Both still up.
    expect(json.child.exitCode).toBeNull();
    expect(text.child.exitCode).toBeNull();
  }, 90_000);
});
