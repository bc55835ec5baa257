import { describeStoreConformance } from '../conformance/store-conformance.ts';
import { createMemoryStore } from './memory-store.ts';

describeStoreConformance('memory', async () => ({ store: createMemoryStore(), cleanup: async () => {} }));
