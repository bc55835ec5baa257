import { describeCheckpointStoreConformance } from '../conformance/checkpoint-store-conformance.ts';
import { createMemoryCheckpointStore } from './memory-checkpoint-store.ts';

describeCheckpointStoreConformance('memory', async () => ({
  store: createMemoryCheckpointStore(),
  cleanup: async () => {},
}));
