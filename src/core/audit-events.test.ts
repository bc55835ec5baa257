import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  AUDIT_KINDS,
  type AuditEntry,
  type AuditEvent,
  type AuditEventMap,
  type AuditKind,
} from './audit.ts';

/*
 * Compile-time, mostly: `npm run typecheck` fails when an `@ts-expect-error` below stops
 * being an error, i.e. when AuditEvent accepts a misspelt kind or data its kind lacks.
 */

const decided: AuditEvent = {
  kind: 'request.decided',
  session: 's1',
  requestId: 'apr_1',
  actor: 'alice',
  data: { verdict: 'approved', reason: null, tool: 'cancel_order', args: '{"orderId":1}', argsHash: 'h' },
};

describe('typed audit events', () => {
  it('a kind picks its data shape', () => {
    expectTypeOf<AuditEvent<'request.moved-on'>['data']>().toEqualTypeOf<{ reason: string }>();
    // One family for both kinds of request: a port request's expiry names its run and port.
    type PortExpiry = Extract<AuditEvent<'request.expired'>['data'], { kind: 'port' }>;
    expectTypeOf<PortExpiry['port']>().toEqualTypeOf<string>();
    expectTypeOf<AuditEvent<'request.expired'>['data']['expiresAt']>().toEqualTypeOf<string>();
    expectTypeOf<AuditEvent['kind']>().toEqualTypeOf<AuditKind>();
    expectTypeOf<keyof AuditEventMap>().toEqualTypeOf<AuditKind>();
    // Narrowing on the kind narrows the data.
    if (decided.kind === 'request.decided')
      expectTypeOf(decided.data.verdict).toEqualTypeOf<'approved' | 'rejected' | 'answered' | 'expired'>();
  });

  it('refuses a misspelt kind, a missing field, a field of another kind and a wrong field type', () => {
    const bad: AuditEvent[] = [
      // @ts-expect-error: no such kind
      { kind: 'request.decidedd', session: null, requestId: null, actor: 'a', data: {} },
      {
        kind: 'request.expired',
        session: null,
        requestId: 'apr_1',
        actor: 'countersign',
        // @ts-expect-error: request.expired records expiresAt
        data: {},
      },
      {
        kind: 'request.expired',
        session: null,
        requestId: 'apr_1',
        actor: 'countersign',
        // @ts-expect-error: `reason` belongs to request.moved-on, not request.expired
        data: { expiresAt: '2030-01-01T00:00:00.000Z', reason: 'x' },
      },
      {
        kind: 'workflow.requested',
        session: 'wf.r',
        requestId: 'req_1',
        actor: 'refund',
        data: {
          run: 'r',
          workflow: 'refund',
          // @ts-expect-error: the version is a number
          version: '1',
          port: 'manager-approval',
          request: '{}',
          requestHash: 'h',
          askedBy: null,
          expiresAt: null,
        },
      },
    ];
    expect(bad).toHaveLength(4);
  });

  it('read entries accept kinds and data this version does not write', () => {
    const older: AuditEntry = {
      seq: 1,
      at: '2020-01-01T00:00:00.000Z',
      kind: 'request.escalated',
      session: null,
      requestId: null,
      actor: 'someone',
      data: { anything: [1, 'two'] },
      prevHash: '0'.repeat(64),
      hash: 'h',
    };
    expectTypeOf(older.kind).toEqualTypeOf<string>();
    // What is written can be read back as an entry.
    expectTypeOf<
      AuditEvent & { seq: number; at: string; prevHash: string; hash: string }
    >().toExtend<AuditEntry>();
  });

  it('AUDIT_KINDS lists every kind of the map once', () => {
    expect(new Set(AUDIT_KINDS).size).toBe(AUDIT_KINDS.length);
    expectTypeOf<(typeof AUDIT_KINDS)[number]>().toEqualTypeOf<AuditKind>();
  });
});
