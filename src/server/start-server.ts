import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { CountersignServer } from './create-server.ts';

export interface RunningServer {
  /** http://host:port, no trailing slash. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (port 0 picks a free one) with @hono/node-server. */
export function startServer(
  server: CountersignServer,
  options: { host: string; port: number },
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const http = serve(
      { fetch: server.app.fetch, hostname: options.host, port: options.port },
      (info: AddressInfo) => {
        const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
        resolve({
          url: `http://${host}:${info.port}`,
          port: info.port,
          async close() {
            // Live event streams never end on their own: end them, then stop listening.
            await server.close();
            await new Promise<void>((done) => {
              http.close(() => done());
              if ('closeAllConnections' in http) http.closeAllConnections();
            });
          },
        });
      },
    );
    http.once('error', reject);
  });
}
