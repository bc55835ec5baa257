import { describe, expect, it } from 'vitest';
import { ExpiredError } from '../../core/errors/expired-error.ts';
import { NotFoundError } from '../../core/errors/not-found-error.ts';
import { editFromForm } from './edit-form.ts';
import { knownTimeZone, localTime } from './local-time.ts';
import { decidedText, refusalText } from './people-messages.ts';

const berlin = { name: 'alice', timeZone: 'Europe/Berlin' };

describe('messages for people', () => {
  it('EXPIRED says when, in their zone, and what happens now; no ISO time, no code', () => {
    const error = new ExpiredError(
      'Request apr_1 expired at 2026-12-01T08:41:06.107Z and can no longer be decided.',
      {
        hint: "The agent is told on the session's next run.",
      },
    );
    const text = refusalText(
      error,
      { id: 'apr_1', expiresAt: '2026-12-01T08:41:06.107Z', decision: null },
      berlin,
    );
    expect(text).toBe(
      'Too late: this request expired at 1 Dec 2026, 09:41 CET without a decision, so nothing was done. The agent tells the customer; if they still want it, they will ask again.',
    );
    expect(text).not.toContain('EXPIRED');
  });

  it('a decision by someone else names them; your own says "You"', () => {
    const decision = {
      verdict: 'approved',
      by: 'mia',
      at: '2026-12-01T08:40:00.000Z',
      reason: null,
      kind: 'person',
    } as const;
    expect(decidedText(decision, berlin)).toBe('mia approved this at 1 Dec 2026, 09:40 CET.');
    expect(decidedText({ ...decision, by: 'Alice' }, berlin)).toBe(
      'You approved this at 1 Dec 2026, 09:40 CET.',
    );
    expect(
      refusalText({ code: 'ALREADY_DECIDED', message: '…' }, { id: 'x', expiresAt: '', decision }, berlin),
    ).toBe(
      'Someone was quicker: mia approved this at 1 Dec 2026, 09:40 CET. Your decision was not recorded; theirs stands.',
    );
  });

  it('NOT_FOUND points to the list, never to the CLI; developer hints are left out', () => {
    const error = new NotFoundError('There is no request apr_9.', {
      hint: 'List the waiting ones with `countersign pending`.',
    });
    const text = refusalText(error, { id: 'apr_9', expiresAt: '', decision: null }, berlin);
    expect(text).toContain('There is no request apr_9 here.');
    expect(text).toContain('Pending requests');
    expect(text).not.toContain('countersign pending');
    const forbidden = refusalText(
      {
        code: 'FORBIDDEN',
        message: 'Deciding this request needs the manager role; alice has support. Use a manager token.',
        hint: 'Use a manager token.',
      },
      null,
      berlin,
    );
    expect(forbidden).toBe(
      'You cannot decide this one: Deciding this request needs the manager role; alice has support.',
    );
  });

  it('time zones: known names only; UTC is said', () => {
    expect(knownTimeZone('Asia/Tokyo')).toBe('Asia/Tokyo');
    expect(knownTimeZone('Mars/Olympus')).toBeNull();
    expect(knownTimeZone('<b>')).toBeNull();
    expect(localTime('2026-06-01T12:00:00.000Z', 'UTC')).toBe('1 Jun 2026, 12:00 UTC');
    expect(localTime('2026-06-01T12:00:00.000Z', 'Europe/Berlin')).toBe('1 Jun 2026, 14:00 CEST');
  });
});

describe('reading an edit from the form', () => {
  const view = {
    args: { item: 'cup', quantity: 12, gift: false, tags: ['a'] },
    editable: ['quantity', 'gift', 'tags'],
  };

  it("keeps the proposed value's type and sends only what changed", () => {
    expect(editFromForm(view, { 'edit:quantity': '6', 'edit:gift': 'false', 'edit:tags': '["a"]' })).toEqual({
      edit: { quantity: 6 },
    });
    expect(editFromForm(view, { 'edit:gift': 'true', 'edit:tags': '["a","b"]' })).toEqual({
      edit: { gift: true, tags: ['a', 'b'] },
    });
  });

  it('refuses unreadable values and an edit that changes nothing, in words', () => {
    expect(editFromForm(view, { 'edit:quantity': 'six' })).toEqual({
      error: 'quantity must be a number; “six” is not.',
    });
    expect(editFromForm(view, { 'edit:gift': 'yes' })).toEqual({
      error: 'gift is true or false; “yes” is neither.',
    });
    expect(editFromForm(view, { 'edit:quantity': '12' })).toEqual({
      error: 'Nothing was changed. Change a value, or approve the call as proposed.',
    });
    // A field that is not editable is not read at all (applyEdit refuses it if sent by other means).
    expect(editFromForm(view, { 'edit:item': 'mug', 'edit:quantity': '3' })).toEqual({
      edit: { quantity: 3 },
    });
  });
});
