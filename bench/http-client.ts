import { readFileSync } from 'node:fs';

/**
 * The HTTP bench's clients, in their own process so they do not share the server's event
 * loop: `clients` keep-alive loops take request ids from one queue and approve them.
 * Prints {latencies, statuses} as JSON.
 */
const [base, token, idsFile, clientsText] = process.argv.slice(2) as [string, string, string, string];
const queue = JSON.parse(readFileSync(idsFile, 'utf8')) as string[];
let next = 0;
const latencies: number[] = [];
const statuses: Record<string, number> = {};
const started = performance.now();
await Promise.all(
  Array.from({ length: Number(clientsText) }, async () => {
    for (;;) {
      const id = queue[next++];
      if (id === undefined) return;
      const t0 = performance.now();
      const response = await fetch(`${base}/v1/approvals/${id}/decision`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"approved":true}',
      });
      await response.arrayBuffer();
      latencies.push(performance.now() - t0);
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    }
  }),
);
process.stdout.write(JSON.stringify({ latencies, statuses, elapsedMs: performance.now() - started }));
