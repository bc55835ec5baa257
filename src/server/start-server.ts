import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { ConfigError } from '../core/errors/config-error.ts';
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
    http.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, options)));
  });
}

/** A port someone else holds, or one we may not bind, is a setting to change: say which. */
function listenError(error: NodeJS.ErrnoException, options: { host: string; port: number }): Error {
  const where = `${options.host}:${options.port}`;
  if (error.code === 'EADDRINUSE')
    return new ConfigError(`Port ${options.port} on ${options.host} is already in use by another process.`, {
      hint: `Stop that process, or listen elsewhere: --port ${options.port === 8787 ? 8788 : 'PORT'} (or set PORT); --port 0 picks a free one.`,
      cause: error,
    });
  if (error.code === 'EACCES')
    return new ConfigError(`Not allowed to listen on ${where}.`, {
      hint: 'Ports below 1024 need privileges: use a port above 1024 (--port or PORT) behind your proxy.',
      cause: error,
    });
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND')
    return new ConfigError(`Cannot listen on ${where}: no such address on this machine.`, {
      hint: 'Use --host 127.0.0.1 (this machine only), --host 0.0.0.0 (every interface) or an address of this machine.',
      cause: error,
    });
  return error;
}
