import { readFileSync } from 'node:fs';
import { drain } from './drain.ts';

/**
 * The HTTP bench's clients, in their own process so they do not share the server's event
 * loop (BASE may be several URLs, comma-separated, taken in turn): `clients` keep-alive loops take request ids from one queue and approve them. The
 * first `warmup` ids are decided first and not measured (the connections open and the
 * server's code is compiled then). Prints {latencies, statuses, elapsedMs} for the rest.
 */
const [basesText, token, idsFile, clientsText, warmupText] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
];
const all = JSON.parse(readFileSync(idsFile, 'utf8')) as string[];
const warmup = Number(warmupText ?? 0);
const clients = Number(clientsText);
// Several servers (comma-separated): requests go to each in turn, as a load balancer would.
const bases = basesText.split(',');
let turn = 0;

async function decide(id: string): Promise<number> {
  const base = bases[turn++ % bases.length];
  const response = await fetch(`${base}/v1/approvals/${id}/decision`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"approved":true}',
  });
  await response.arrayBuffer();
  return response.status;
}

function drive(queue: string[], measure: (status: number, ms: number) => void): Promise<void> {
  return drain(queue, clients, async (id) => {
    const t0 = performance.now();
    const status = await decide(id);
    measure(status, performance.now() - t0);
  });
}

await drive(all.slice(0, warmup), () => undefined);
const latencies: number[] = [];
const statuses: Record<string, number> = {};
const started = performance.now();
await drive(all.slice(warmup), (status, ms) => {
  latencies.push(ms);
  statuses[status] = (statuses[status] ?? 0) + 1;
});
process.stdout.write(JSON.stringify({ latencies, statuses, elapsedMs: performance.now() - started }));
