import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy that holds every chunk `delayMs` before passing it on, in each direction, so a
 * PostgreSQL on loopback answers as one across a network would (a round trip costs twice
 * `delayMs` more). Loopback answers in tens of microseconds, which hides what a round trip
 * costs once the database is on another machine: the case of users who outgrew one.
 *
 *   node bench/latency-proxy.ts 15432 127.0.0.1:5432 1
 *   COUNTERSIGN_BENCH_PG=postgres://postgres@127.0.0.1:15432/postgres node bench/http-postgres.ts
 */
export function startLatencyProxy(listenPort: number, upstream: string, delayMs: number): Promise<Server> {
  const [host, port] = splitHostPort(upstream);
  const server = createServer((client) => {
    const db = createConnection({ host, port });
    relay(client, db, delayMs);
    relay(db, client, delayMs);
    const close = () => {
      client.destroy();
      db.destroy();
    };
    client.on('error', close).on('close', close);
    db.on('error', close).on('close', close);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', () => resolve(server));
  });
}

/** Passes `from`'s bytes to `to` `delayMs` later, in order (every chunk waits the same time). */
function relay(from: Socket, to: Socket, delayMs: number): void {
  from.setNoDelay(true);
  from.on('data', (chunk) => {
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, delayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), delayMs));
}

function splitHostPort(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  if (colon < 0) throw new Error(`upstream "${address}" is not HOST:PORT`);
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}

if (import.meta.main) {
  const [listen = '15432', upstream = '127.0.0.1:5432', delay = '1'] = process.argv.slice(2);
  await startLatencyProxy(Number(listen), upstream, Number(delay));
  console.log(`latency proxy: 127.0.0.1:${listen} -> ${upstream}, +${delay} ms each way`);
}
