import { afterEach, beforeEach, describe } from 'vitest';
import type { Outbox } from '../ports/server/outbox.ts';
import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import { deliveryCases } from './delivery-cases.ts';
import type { PortContext } from './fixtures.ts';
import { webSessionCases } from './web-session-cases.ts';

/** The server ports a backend may keep besides the Store (SQLite and PostgreSQL do). */
export type ServerPorts = Outbox & WebSessionStore & { close(): Promise<void> };

export type ServerPortFactory = () => Promise<{
  store: ServerPorts;
  cleanup: () => Promise<void>;
  /** Another one on the same database, as a second process would open it. */
  sibling?: () => Promise<ServerPorts>;
}>;

/**
 * The behaviour of the server ports (webhook outbox, inbox sign-ins), apart from the Store
 * suite: an agent backend need not implement them. A SQL backend passes its store object.
 */
export function describeServerPortConformance(name: string, factory: ServerPortFactory): void {
  describe(`Server port conformance: ${name}`, () => {
    let current: Awaited<ReturnType<ServerPortFactory>> | undefined;
    const siblings: ServerPorts[] = [];

    beforeEach(async () => {
      current = await factory();
    });

    afterEach(async () => {
      for (const sibling of siblings.splice(0)) await sibling.close();
      if (current === undefined) return;
      await current.store.close();
      await current.cleanup();
      current = undefined;
    });

    const ctx: PortContext<ServerPorts> = {
      store: () => {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        return current.store;
      },
      async sibling() {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        if (current.sibling === undefined) return current.store;
        const sibling = await current.sibling();
        siblings.push(sibling);
        return sibling;
      },
    };

    deliveryCases(ctx);
    webSessionCases(ctx);
  });
}
