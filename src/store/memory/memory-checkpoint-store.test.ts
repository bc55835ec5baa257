import { describeCheckpointStoreConformance } from '../conformance/checkpoint-store-conformance.ts';
import { createMemoryCheckpointStore } from './memory-checkpoint-store.ts';

describeCheckpointStoreConformance({ name: 'memory', create: async () => createMemoryCheckpointStore() });
