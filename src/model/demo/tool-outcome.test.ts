import { describe, expect, it } from 'vitest';
import { isRejection, readOutcome, render } from './tool-outcome.ts';

describe('readOutcome', () => {
  it.each([
    'Rejected by the reviewer, not done. Reason: no.',
    'Expired, not done. Reason: This request expired without a decision, so nothing was done.',
    'Not done. Reason: The person sent a new message instead, so this was not done.',
    'Not allowed: order 1044 belongs to someone else',
    'The tool failed: connection refused',
    'Unknown tool "refund". Available tools: cancel_order.',
    'Invalid arguments for cancel_order: orderId: expected number. Nothing was run.',
  ])('reads a failure, verbatim: %s', (text) => {
    expect(readOutcome(text)).toEqual({ ok: false, detail: text });
  });

  it('quotes a successful string and uses an object message', () => {
    expect(readOutcome('Order 1043 shipped.')).toEqual({ ok: true, detail: '"Order 1043 shipped."' });
    expect(readOutcome({ message: 'Added.', id: 3 })).toEqual({ ok: true, detail: 'Added.' });
    expect(readOutcome({ status: 'shipped' })).toEqual({ ok: true, detail: 'status: shipped' });
  });

  it('reads failure from objects and from the prompt flag', () => {
    expect(readOutcome({ ok: false, message: 'Out of stock.' })).toEqual({
      ok: false,
      detail: 'Out of stock.',
    });
    expect(readOutcome({ error: { message: 'Boom.' } })).toEqual({ ok: false, detail: 'Boom.' });
    expect(readOutcome({ status: 'rejected', reason: 'No.' })).toEqual({ ok: false, detail: 'No.' });
    expect(readOutcome('All fine', true)).toEqual({ ok: false, detail: 'All fine' });
  });
});

describe('isRejection', () => {
  it('tells a person saying no from a validation error', () => {
    expect(isRejection('Rejected by the reviewer, not done. Reason: no.')).toBe(true);
    expect(
      isRejection('Not done. Reason: The person sent a new message instead, so this was not done.'),
    ).toBe(true);
    expect(
      isRejection('Invalid arguments for cancel_order: orderId: expected number. Nothing was run.'),
    ).toBe(false);
  });
});

describe('render', () => {
  it('reads a lone list under a key as the list', () => {
    expect(render({ items: ['milk', 'bread'] })).toBe('milk; bread');
    expect(render({ books: [{ id: 'b-1', title: 'Birds' }] })).toBe('id: b-1, title: Birds');
    expect(render({ books: [] })).toBe('none');
  });

  it('keeps nesting visible', () => {
    expect(render({ order: { id: 3 }, tags: ['a', 'b'], note: null })).toBe(
      'order: (id: 3), tags: [a, b], note: null',
    );
  });
});
