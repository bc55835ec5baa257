import { spawn } from 'node:child_process';
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

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

/**
 * The proxy in a process of its own (its CPU is not the server's), on a free port; resolves
 * with the port and a way to stop it.
 */
export async function spawnLatencyProxy(
  upstream: string,
  delayMs: number,
): Promise<{ port: number; stop(): void }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '0', upstream, String(delayMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`latency proxy exited with ${code}`)));
  });
  return { port: (JSON.parse(line) as { port: number }).port, stop: () => child.kill() };
}

if (import.meta.main) {
  const [listen = '15432', upstream = '127.0.0.1:5432', delay = '1'] = process.argv.slice(2);
  const server = await startLatencyProxy(Number(listen), upstream, Number(delay));
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ port, upstream, delayMs: Number(delay) }));
}
