import { ALL_STORE_SUITES, describeStoreConformance } from '../conformance/store-conformance.ts';
import { createMemoryStore } from './memory-store.ts';

describeStoreConformance(
  { name: 'memory', create: async () => createMemoryStore() },
  { suites: ALL_STORE_SUITES },
);
