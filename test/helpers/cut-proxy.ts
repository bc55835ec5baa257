import { type AddressInfo, createServer, Socket } from 'node:net';

/**
 * A TCP proxy on loopback whose connections a test can cut, as a network drop does, and
 * whose new connections it can hold until released: the client reconnects exactly when told.
 * Or refuse them until released, as a server that is down does (`refuse`, `refused`).
 * `heads` keeps every HTTP request head a client sent, in order: the start of each chunk that
 * opens with a request line. Not only each connection's first chunk: a browser sends a
 * reconnect over a kept-alive connection as readily as over a new one.
 */
const REQUEST_LINE = /^[A-Z]+ \S+ HTTP\/1\.[01]\r\n/;

export async function cutProxy(target: { host: string; port: number }) {
  const open = new Set<Socket>();
  const held: Socket[] = [];
  const heads: string[] = [];
  let holding = false;
  let refusing = false;
  let refused = 0;

  const forward = (client: Socket) => {
    const upstream = new Socket();
    upstream.connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.resume();
  };

  const proxy = createServer((client) => {
    if (refusing) {
      refused += 1;
      client.destroy();
      return;
    }
    client.pause();
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (REQUEST_LINE.test(text)) heads.push(text);
    });
    if (holding) held.push(client);
    else forward(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    heads,
    /** Drops every open connection and holds new ones until `release()`. */
    cut() {
      holding = true;
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    /**
     * Drops every open connection and closes each new one at once until `release()`, as a
     * server that is shutting down or restarting does: clients fail fast (pg: "Connection
     * terminated unexpectedly") instead of waiting. `refused()` counts those connections.
     */
    refuse() {
      refusing = true;
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    refused: () => refused,
    release() {
      holding = false;
      refusing = false;
      for (const client of held.splice(0)) forward(client);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...open, ...held]) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}
