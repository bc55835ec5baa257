import type { Liveness } from '../liveness.ts';

/**
 * The backend of stores no other host shares (SQLite, memory), and of a PostgreSQL store
 * opened with `liveness: false`: no tokens. The one rule (dead-owners.ts) still judges a
 * holder in this process's space by its PID; a holder elsewhere is never judged dead, and
 * its lease lapses after its term.
 */
export const localLiveness: Liveness = {
  kind: 'local',
  token: async () => null,
  released: async () => new Set<string>(),
  onChange: () => () => undefined,
  now: async () => Date.now(),
  close: async () => undefined,
};
