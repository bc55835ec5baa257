// A backend that declares skips, as a third party would: read by test/conformance-kit.test.ts.
import { expect, it } from 'vitest';
import { createMemoryCheckpointStore, createMemoryStore, type Store } from '../../src/index.ts';
import { describeCheckpointStoreConformance, describeStoreConformance } from '../../src/testing.ts';

const created: Store[] = [];
const destroyed: Store[] = [];

describeStoreConformance(
  {
    name: 'skipping',
    create: async () => {
      const store = createMemoryStore();
      created.push(store);
      return store;
    },
    destroy: async (store) => {
      destroyed.push(store);
    },
  },
  {
    suites: ['leases', 'state'],
    skip: [
      {
        reason: 'leases are held elsewhere',
        tests: ['leases > grants a free lease and records owner and expiry'],
      },
      { reason: 'state is read-only here', tests: ['application state > hands out copies'] },
    ],
  },
);

describeStoreConformance(
  { name: 'misnamed', create: async () => createMemoryStore() },
  { suites: ['state'], skip: [{ reason: 'a typo', tests: ['application state > no such test'] }] },
);

describeCheckpointStoreConformance(
  { name: 'skipping', create: async () => createMemoryCheckpointStore() },
  {
    skip: [
      {
        reason: 'runs are never empty here',
        tests: ['checkpoints > knows nothing of a run that was never saved'],
      },
    ],
  },
);

// Runs after the suites above (vitest keeps the order of definition).
it('creates a store per test that runs, none for a skipped one, and destroys each once', () => {
  // 'leases' has 12 cases and 'state' 11; one of each is skipped.
  expect(created).toHaveLength(21);
  expect(new Set(created).size).toBe(21);
  expect(destroyed).toEqual(created);
});
