import { defineConfig } from 'vitest/config';

// Runs the countersign/testing fixtures of test/kit on their own (test/conformance-kit.test.ts
// starts it in a child process and reads the JSON report); the main config never picks them up.
export default defineConfig({
  test: { include: ['test/kit/*.kit.ts'], pool: 'forks' },
});
