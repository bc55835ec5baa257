/**
 * `countersign/testing`: the conformance suites countersign's own backends pass, for a
 * backend of yours. They are vitest suites (vitest is an optional peer dependency, needed
 * by this entry only): call them at the top level of a test file.
 *
 *   describeStoreConformance({ name: 'mine', create: () => openMine() }, {
 *     skip: [{ reason: 'no sub-millisecond clock', tests: ['leases > …'] }],
 *   });
 */
export {
  type CheckpointStoreConformanceOptions,
  type CheckpointStoreInitializer,
  describeCheckpointStoreConformance,
} from './store/conformance/checkpoint-store-conformance.ts';
export { NAME_SEPARATOR, type SkipEntry } from './store/conformance/harness.ts';
export {
  ALL_STORE_SUITES,
  CORE_STORE_SUITES,
  describeStoreConformance,
  SERVER_STORE_SUITE_NAMES,
  type StoreConformanceOptions,
  type StoreInitializer,
  type StoreSuiteName,
} from './store/conformance/store-conformance.ts';
