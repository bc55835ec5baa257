import { describeServerPortConformance } from '../conformance/server-port-conformance.ts';
import { createMemoryOutbox } from './memory-outbox.ts';
import { createMemoryWebSessionStore } from './memory-web-session-store.ts';

// What createServer uses when its store keeps no outbox or sign-ins of its own.
describeServerPortConformance('memory', async () => ({
  store: { ...createMemoryOutbox(), ...createMemoryWebSessionStore(), close: async () => {} },
  cleanup: async () => {},
}));
