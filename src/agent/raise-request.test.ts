import { describe, expect, it } from 'vitest';
import { bindArgs } from '../core/canonical-json.ts';
import { checkBinding, toolCallBinding } from '../core/check-binding.ts';
import { autoRuleApproval } from './match-rule.ts';
import { approvedByRule, raisedEvent, toolCallRequest } from './raise-request.ts';

const raised = toolCallRequest({
  id: 'apr_1',
  session: 's1',
  agent: 'bookstore',
  callId: 'call-1',
  tool: 'cancel_order',
  args: { orderId: 1044 },
  effect: 'Cancels order 1044.',
  now: new Date('2026-01-01T00:00:00.000Z'),
  ttlMs: 60_000,
  raisedBy: 'c-100',
  customer: 'c-100',
  requiredRole: null,
  run: null,
});

describe('raising a request (no store)', () => {
  it('is pending, bound to its canonical arguments, and expires after its ttl', () => {
    expect(raised).toMatchObject({
      status: 'pending',
      decision: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-01-01T00:01:00.000Z',
      raisedBy: 'c-100',
      ...bindArgs({ orderId: 1044 }),
    });
    expect(() => checkBinding(toolCallBinding(raised), 'deciding')).not.toThrow();
    expect(
      raisedEvent(raised, { name: 'cancel_order', identity: 'cancel_order@aa' }, 'bookstore'),
    ).toMatchObject({
      kind: 'request.raised',
      requestId: 'apr_1',
      actor: 'bookstore',
      data: { toolIdentity: 'cancel_order@aa', argsHash: raised.argsHash, effect: 'Cancels order 1044.' },
    });
  });

  it('a rule approves it at its creation time, named in the audit, without touching the raised copy', () => {
    const { request, event } = approvedByRule(raised, autoRuleApproval('small'));
    expect(request).toMatchObject({
      status: 'approved',
      decision: { verdict: 'approved', by: 'auto:small', kind: 'auto-rule', at: raised.createdAt },
    });
    expect(raised.status).toBe('pending');
    expect(event).toMatchObject({
      kind: 'request.auto-approved',
      actor: 'auto:small',
      data: { rule: 'auto:small' },
    });
  });

  it('refuses a ttl whose expiry falls past the year 9999 (stored text would sort as long past)', () => {
    const far = (ttlMs: number) => () =>
      toolCallRequest({
        id: 'apr_2',
        session: 's1',
        agent: 'bookstore',
        callId: 'call-2',
        tool: 'cancel_order',
        args: { orderId: 1044 },
        effect: 'Cancels order 1044.',
        now: new Date('2026-01-01T00:00:00.000Z'),
        ttlMs,
        raisedBy: null,
        customer: null,
        requiredRole: null,
        run: null,
      });
    // Year 10000, and past what a Date can hold at all.
    for (const ttlMs of [8000 * 365 * 86_400_000, Number.POSITIVE_INFINITY]) {
      expect(far(ttlMs)).toThrow(
        expect.objectContaining({
          code: 'INVALID_INPUT',
          message: expect.stringContaining('falls outside the years 0000 to 9999'),
        }),
      );
    }
  });
});
