import { describe, expect, it } from 'vitest';
import { assertStorableInstant, parseInstant } from '../src/core/instant.ts';
import { statsWindow } from '../src/requests/request-stats.ts';

/*
 * Date.parse rolls a day past the end of its month over into the next month
 * ("2026-02-30" reads as 2 March): such a time names no day of the calendar, so it is
 * refused, not silently moved. And a bound that is not text is INVALID_INPUT, not a TypeError.
 */

const invalid = (text: string) =>
  expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining(text) });

describe('a day the month does not have', () => {
  const days = [
    '2026-02-30T00:00:00Z',
    '2026-02-31',
    '2026-04-31T12:00:00+02:00',
    '2025-02-29T00:00:00.000Z',
    '1900-02-29T00:00:00.000Z',
    '+002026-02-30T00:00:00Z',
  ];

  it('parseInstant refuses it instead of moving it to another day', () => {
    for (const text of days) {
      expect(() => parseInstant(text, 'expiresAt'), text).toThrow(invalid(`expiresAt "${text}"`));
    }
  });

  it('assertStorableInstant and statsWindow refuse it too', () => {
    expect(() => assertStorableInstant('2026-02-30T00:00:00.000Z', 'expiresAt')).toThrow(
      invalid('expiresAt "2026-02-30T00:00:00.000Z"'),
    );
    expect(() => statsWindow({ since: '2026-02-30T00:00:00Z' }, new Date('2026-06-01T00:00:00Z'))).toThrow(
      invalid('since "2026-02-30T00:00:00Z"'),
    );
  });

  it('still takes real days: a leap day, month ends, 24:00 of a day', () => {
    expect(parseInstant('2024-02-29T00:00:00Z', 'x')).toBe('2024-02-29T00:00:00.000Z');
    expect(parseInstant('2000-02-29', 'x')).toBe('2000-02-29T00:00:00.000Z');
    expect(parseInstant('2026-04-30T23:59:59.999Z', 'x')).toBe('2026-04-30T23:59:59.999Z');
    expect(parseInstant('2026-12-31T23:00:00-01:00', 'x')).toBe('2027-01-01T00:00:00.000Z');
    expect(parseInstant('2026-01-31T24:00:00Z', 'x')).toBe('2026-02-01T00:00:00.000Z');
    expect(parseInstant('0000-02-29T00:00:00Z', 'x')).toBe('0000-02-29T00:00:00.000Z');
  });
});

describe('statsWindow: a bound that is not text', () => {
  it('is INVALID_INPUT naming it, not a TypeError', () => {
    const now = new Date('2026-06-01T00:00:00Z');
    for (const since of [123, new Date('2026-01-01T00:00:00Z'), ['7d'], {}]) {
      expect(() => statsWindow({ since } as never, now), String(since)).toThrow(invalid('since'));
    }
    expect(() => statsWindow({ until: 5 } as never, now)).toThrow(invalid('until'));
  });
});
