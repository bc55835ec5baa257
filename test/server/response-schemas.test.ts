import { describe, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { ExecutionView } from '../../src/agent/views.ts';
import type { AuditEntry, AuditVerification } from '../../src/core/audit.ts';
import type { StoredMessage } from '../../src/core/messages.ts';
import type { ErasureReport } from '../../src/erasure/erase-principal.ts';
import type * as schemas from '../../src/server/api/response-schemas.ts';
import type { HttpApprovalView, HttpTurnResult } from '../../src/server/approval-views.ts';
import type { ErrorReply } from '../../src/server/http/error-status.ts';
import type { CheckpointSummary, RunSummary } from '../../src/store/checkpoint-store.ts';
import type { DecisionStats, StandingRule } from '../../src/store/store.ts';
import type { RunView } from '../../src/workflow/run-view.ts';

type Of<Schema extends z.ZodType> = z.output<Schema>;

/*
 * Compile-time: each response schema (what the OpenAPI document says) has exactly the type the
 * server builds that response as. `npm run typecheck` fails when one changes without the other;
 * the contract tests then check the values at run time.
 */
describe('response schemas', () => {
  it('are the types the routes respond with', () => {
    expectTypeOf<Of<typeof schemas.approval>>().toEqualTypeOf<HttpApprovalView>();
    expectTypeOf<Of<typeof schemas.execution>>().toEqualTypeOf<ExecutionView>();
    expectTypeOf<Of<typeof schemas.turnResult>>().toEqualTypeOf<HttpTurnResult>();
    expectTypeOf<Of<typeof schemas.message>>().toEqualTypeOf<StoredMessage>();
    expectTypeOf<Of<typeof schemas.auditEntry>>().toEqualTypeOf<AuditEntry>();
    expectTypeOf<Of<typeof schemas.auditVerification>>().toEqualTypeOf<AuditVerification>();
    expectTypeOf<Of<typeof schemas.rule>>().toEqualTypeOf<StandingRule>();
    expectTypeOf<Of<typeof schemas.runSummary>>().toEqualTypeOf<RunSummary>();
    expectTypeOf<Of<typeof schemas.runView>>().toEqualTypeOf<RunView>();
    expectTypeOf<Of<typeof schemas.checkpoint>>().toEqualTypeOf<CheckpointSummary>();
    expectTypeOf<Of<typeof schemas.errorBody>>().toEqualTypeOf<ErrorReply['body']>();
    expectTypeOf<Of<typeof schemas.decisionStats>>().toEqualTypeOf<DecisionStats>();
    expectTypeOf<Of<typeof schemas.erasureReport>>().toEqualTypeOf<ErasureReport>();
  });
});
