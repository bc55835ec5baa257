import { afterEach, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { metricsAccessFromEnv } from '../../src/server/metrics.ts';
import { startServer } from '../../src/server/start-server.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { raiseCancel, testServer } from './helpers.ts';

/**
 * GET /metrics over real HTTP: the Prometheus text a scraper reads, parsed line by line
 * (`name{label="value",…} number`, `# HELP` / `# TYPE` comments) as the exposition format says.
 */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

type Sample = { name: string; labels: Record<string, string>; value: number };

function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { samples, types };
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted),
  )?.value;
}

async function listening(overrides: Parameters<typeof testServer>[0]) {
  const server = testServer(overrides);
  const running = await startServer(server, { host: '127.0.0.1', port: 0 });
  closers.push(async () => {
    await running.close();
    await server.close();
  });
  return { server, url: running.url };
}

async function scrape(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await response.text());
}

describe('GET /metrics', () => {
  it('counts a decision and an expiry; the waiting gauge is read from the store at scrape time', async () => {
    let offsetMs = 0;
    const { server, url } = await listening({ metrics: 'open', now: () => new Date(Date.now() + offsetMs) });

    const decided = await raiseCancel(server, 's1');
    const answer = await server.call('POST', `/v1/requests/${decided}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(answer.status).toBe(200);
    await raiseCancel(server, 's2');

    const before = await scrape(url);
    expect(before.types.get('countersign_requests_waiting')).toBe('gauge');
    expect(before.types.get('countersign_decisions_total')).toBe('counter');
    expect(before.types.get('countersign_time_to_decision_seconds')).toBe('histogram');
    expect(value(before.samples, 'countersign_requests_waiting')).toBe(1);
    expect(
      value(before.samples, 'countersign_decisions_total', { verdict: 'approved', kind: 'tool-call' }),
    ).toBe(1);
    expect(value(before.samples, 'countersign_time_to_decision_seconds_count', { kind: 'tool-call' })).toBe(
      1,
    );
    // Decided within the test: well under a minute, so in the 60 s bucket and under.
    expect(
      value(before.samples, 'countersign_time_to_decision_seconds_bucket', { kind: 'tool-call', le: '60' }),
    ).toBe(1);
    expect(value(before.samples, 'countersign_expiries_total', { kind: 'tool-call' })).toBeUndefined();

    offsetMs = 25 * 3_600_000; // past the default 24 h TTL
    await server.watch();

    const after = await scrape(url);
    expect(value(after.samples, 'countersign_requests_waiting')).toBe(0);
    expect(value(after.samples, 'countersign_expiries_total', { kind: 'tool-call' })).toBe(1);
    // An expiry is not a decision by a person: the decision counter stays.
    expect(
      value(after.samples, 'countersign_decisions_total', { verdict: 'approved', kind: 'tool-call' }),
    ).toBe(1);
    expect(value(after.samples, 'countersign_unknown_outcomes_total')).toBe(0);
    expect(value(after.samples, 'countersign_model_errors_total')).toBe(0);

    // No customer data in labels: no session, request id, order or principal.
    const labelValues = after.samples.flatMap((sample) => Object.values(sample.labels));
    expect(labelValues.filter((label) => /s1|s2|apr_|1044|c-100|alice/.test(label))).toEqual([]);
  });

  it('a workflow request answered through /v1/requests counts as a port decision', async () => {
    const { server, url } = await listening({
      metrics: 'open',
      workflows: [refundWorkflow],
      checkpoints: createMemoryCheckpointStore(),
    });
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'run-m', input: 1040 },
    });
    const requestId = started.json.requests[0].id as string;
    const answered = await server.call('POST', `/v1/requests/${requestId}/decision`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok' } },
    });
    expect(answered.status).toBe(200);
    const { samples } = await scrape(url);
    expect(value(samples, 'countersign_decisions_total', { verdict: 'answered', kind: 'port' })).toBe(1);
    expect(value(samples, 'countersign_time_to_decision_seconds_count', { kind: 'port' })).toBe(1);
  });

  it('two servers in one process each have their own registry', async () => {
    const one = await listening({ metrics: 'open' });
    const two = await listening({ metrics: 'open' });
    await raiseCancel(one.server, 's1');
    expect(value((await scrape(one.url)).samples, 'countersign_requests_waiting')).toBe(1);
    expect(value((await scrape(two.url)).samples, 'countersign_requests_waiting')).toBe(0);
  });

  it('off by default; with a token, a scrape without it is 401', async () => {
    const off = await listening({});
    expect((await fetch(`${off.url}/metrics`)).status).toBe(404);

    const token = 'metrics-token-0123456789';
    const guarded = await listening({ metrics: { token } });
    const refused = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong' } });
    expect(refused.status).toBe(401);
    expect(await refused.text()).not.toContain('countersign_');
    const read = await scrape(guarded.url, { authorization: `Bearer ${token}` });
    expect(value(read.samples, 'countersign_requests_waiting')).toBe(0);
  });

  it('COUNTERSIGN_METRICS: off, open, or token with COUNTERSIGN_METRICS_TOKEN', () => {
    expect(metricsAccessFromEnv({})).toBe('off');
    expect(metricsAccessFromEnv({ COUNTERSIGN_METRICS: 'open' })).toBe('open');
    expect(
      metricsAccessFromEnv({
        COUNTERSIGN_METRICS: 'token',
        COUNTERSIGN_METRICS_TOKEN: 'a-long-scrape-token-1',
      }),
    ).toEqual({ token: 'a-long-scrape-token-1' });
    expect(() => metricsAccessFromEnv({ COUNTERSIGN_METRICS: 'token' })).toThrow(/COUNTERSIGN_METRICS_TOKEN/);
    expect(() => metricsAccessFromEnv({ COUNTERSIGN_METRICS: 'yes' })).toThrow(/off, open or token/);
  });
});
