import { request } from 'node:http';

/**
 * Inboxes left open during the HTTP bench, in a process of their own: `count` live event
 * streams (`/v1/events`) that count the `approval.decided` events they receive. Prints
 * "ready" once every stream is open; on a line on stdin, closes them and prints the counts as
 * JSON. Counting scans bytes instead of parsing, so the watchers cost the machine little.
 */
const [base, token, countText] = process.argv.slice(2) as [string, string, string];
const marker = Buffer.from('event: approval.decided\n');
const counts: number[] = [];
const closers: Array<() => void> = [];

function open(index: number): Promise<void> {
  counts[index] = 0;
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/events`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let tail = Buffer.alloc(0);
      res.on('data', (chunk: Buffer) => {
        // The marker may straddle two chunks: keep the end of the previous one.
        const data = Buffer.concat([tail, chunk]);
        let at = data.indexOf(marker);
        while (at !== -1) {
          counts[index]! += 1;
          at = data.indexOf(marker, at + marker.length);
        }
        tail = data.subarray(Math.max(0, data.length - marker.length + 1));
        resolve();
      });
      res.on('error', () => undefined);
    });
    req.on('error', reject);
    req.end();
    closers.push(() => req.destroy());
  });
}

await Promise.all(Array.from({ length: Number(countText) }, (_, i) => open(i)));
process.stdout.write('ready\n');
process.stdin.once('data', () => {
  for (const close of closers) close();
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  process.exit(0);
});
