import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../core/messages.ts';
import { approvalPlan, type CallFacts, classifyCalls } from './classify-calls.ts';
import { autoRuleApproval } from './match-rule.ts';

const call = (id: string, tool = 'cancel_order', args: ToolCall['args'] = { orderId: 1 }): ToolCall => ({
  id,
  tool,
  args,
});
const options = { knownTools: ['cancel_order', 'order_status'], oneAtATime: false };
const byRule = autoRuleApproval('small-refunds');

describe('classifyCalls (no store, no tool code)', () => {
  it('answers unknown tools, unparseable and invalid arguments and refusals as errors, with the model-facing words', () => {
    const calls = [
      call('a', 'drop_table', { x: 1 }),
      call('b', 'cancel_order', '{oops'),
      call('c'),
      call('d'),
    ];
    const facts: CallFacts[] = [
      { kind: 'unknown-tool' },
      { kind: 'unparseable', toolName: 'cancel_order' },
      { kind: 'invalid-args', error: 'orderId: expected a number' },
      { kind: 'not-allowed', args: { orderId: 1 }, reason: 'not your order' },
    ];
    const step = classifyCalls(calls, facts, options);
    expect(step.plans).toEqual([
      {
        kind: 'error',
        args: { x: 1 },
        output: 'Unknown tool "drop_table". Available tools: cancel_order, order_status.',
      },
      {
        kind: 'error',
        args: '{oops',
        output:
          "Arguments for cancel_order were not valid JSON. Nothing was run. Send a JSON object matching the tool's schema.",
      },
      { kind: 'error', args: { orderId: 1 }, output: 'orderId: expected a number' },
      { kind: 'error', args: { orderId: 1 }, output: 'Not allowed: not your order' },
    ]);
    expect(step).toMatchObject({ askedPerson: false, autoApproved: false });
  });

  it('runs calls that need no approval with the validated arguments', () => {
    const step = classifyCalls(
      [call('a', 'order_status', { orderId: '7' })],
      [{ kind: 'no-approval', args: { orderId: 7 } }],
      options,
    );
    expect(step.plans).toEqual([{ kind: 'run', args: { orderId: 7 } }]);
  });

  it('asks a person for every guarded call, unless a rule covers it', () => {
    const step = classifyCalls(
      [call('a'), call('b'), call('c')],
      [
        { kind: 'needs-approval', args: { orderId: 1 }, auto: null },
        { kind: 'needs-approval', args: { orderId: 2 }, auto: byRule },
        { kind: 'needs-approval', args: { orderId: 3 }, auto: null },
      ],
      options,
    );
    expect(step.plans.map((plan) => plan.kind)).toEqual(['ask', 'auto-approve', 'ask']);
    expect(step.plans[1]).toMatchObject({ approval: { by: 'auto:small-refunds', kind: 'auto-rule' } });
    expect(step).toMatchObject({ askedPerson: true, autoApproved: true });
  });

  it('one at a time: calls behind a waiting request queue, but a rule still approves them at once', () => {
    const step = classifyCalls(
      [call('a'), call('b'), call('c'), call('d')],
      [
        { kind: 'no-approval', args: {} },
        { kind: 'needs-approval', args: { orderId: 1 }, auto: null },
        { kind: 'needs-approval', args: { orderId: 2 }, auto: null },
        { kind: 'needs-approval', args: { orderId: 3 }, auto: byRule },
      ],
      { ...options, oneAtATime: true },
    );
    expect(step.plans.map((plan) => plan.kind)).toEqual(['run', 'ask', 'queue', 'auto-approve']);
  });

  it('approvalPlan: a rule wins, then queue only when one at a time and a request waits', () => {
    expect(approvalPlan(byRule, { waiting: true, oneAtATime: true })).toBe('auto-approve');
    expect(approvalPlan(null, { waiting: true, oneAtATime: true })).toBe('queue');
    expect(approvalPlan(null, { waiting: true, oneAtATime: false })).toBe('ask');
    expect(approvalPlan(null, { waiting: false, oneAtATime: true })).toBe('ask');
  });
});
