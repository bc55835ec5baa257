import { describe, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { SessionSnapshot } from '../core/session-snapshot.ts';
import type { sessionSnapshotSchema } from './snapshot-schema.ts';

describe('the snapshot schema', () => {
  // Checked by tsc (test files are in the project): a field added to SessionSnapshot or one of
  // its records and not to the schema fails here, instead of every import refusing it.
  it('describes exactly the SessionSnapshot type', () => {
    expectTypeOf<z.infer<typeof sessionSnapshotSchema>>().toEqualTypeOf<SessionSnapshot>();
  });
});
