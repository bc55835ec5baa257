import { describe, expect, it } from 'vitest';
import { assertStorableInstant, parseInstant } from '../src/core/instant.ts';
import { statsWindow } from '../src/requests/request-stats.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';

/*
 * Stores compare times as text, which orders them only in the one form
 * YYYY-MM-DDTHH:MM:SS.sssZ: "2026-01-01T00:00:00+02:00" sorts after
 * "2026-01-01T00:00:00.000Z" though it is two hours earlier. A time given as a parameter is
 * normalised to that form (parseInstant); one a store would write as it stands is refused
 * unless already in it (assertStorableInstant).
 */

const invalid = (text: string) =>
  expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining(text) });

describe('parseInstant: a parameter, normalised to UTC', () => {
  it('takes any ISO-8601 instant with a zone and gives the UTC form', () => {
    expect(parseInstant('2026-01-01T00:00:00+02:00', 'expiresAt')).toBe('2025-12-31T22:00:00.000Z');
    expect(parseInstant('2026-01-01T00:00:00-0530', 'expiresAt')).toBe('2026-01-01T05:30:00.000Z');
    expect(parseInstant('2026-01-01T00:00:00Z', 'expiresAt')).toBe('2026-01-01T00:00:00.000Z');
    expect(parseInstant('2026-01-01T00:00Z', 'expiresAt')).toBe('2026-01-01T00:00:00.000Z');
    expect(parseInstant('2026-01-01', 'expiresAt')).toBe('2026-01-01T00:00:00.000Z');
    expect(parseInstant('2026-01-01T00:00:00.000Z', 'expiresAt')).toBe('2026-01-01T00:00:00.000Z');
  });

  it('refuses what Date.parse reads only by guessing: no zone (the host local time) or not ISO-8601', () => {
    for (const text of [
      '2026-01-01T00:00:00',
      '2026-01-01 00:00:00Z',
      '1',
      'Jan 1 2026',
      'Thu, 01 Jan 2026 00:00:00 GMT',
    ]) {
      expect(() => parseInstant(text, 'expiresAt'), text).toThrow(invalid(`expiresAt "${text}"`));
    }
  });
});

describe('assertStorableInstant: a time written as it stands, refused unless in the UTC form', () => {
  it('refuses an offset or a short form, saying which UTC time to give', () => {
    for (const [text, utc] of [
      ['2026-01-01T00:00:00+02:00', '2025-12-31T22:00:00.000Z'],
      ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000Z'],
      ['2026-01-01', '2026-01-01T00:00:00.000Z'],
    ] as const) {
      expect(() => assertStorableInstant(text, 'expiresAt')).toThrow(
        invalid(`expiresAt "${text}" is not in UTC as YYYY-MM-DDTHH:MM:SS.sssZ; give it as ${utc}`),
      );
    }
    expect(() => assertStorableInstant('2026-01-01T00:00:00.000Z', 'expiresAt')).not.toThrow();
  });

  it("a store's decisionStats takes only UTC bounds", async () => {
    const store = createMemoryStore();
    await expect(
      store.decisionStats({ since: '2026-01-01T00:00:00+02:00', until: '2026-02-01T00:00:00.000Z' }),
    ).rejects.toEqual(invalid('since "2026-01-01T00:00:00+02:00" is not in UTC'));
  });
});

describe('statsWindow (/v1/stats?since=&until=): bounds normalised, out-of-range ones refused', () => {
  const now = new Date('2026-12-01T12:00:00.000Z');

  it('an instant with an offset becomes the UTC form', () => {
    expect(
      statsWindow({ since: '2026-11-30T14:00:00+02:00', until: '2026-12-01T08:00:00-04:00' }, now),
    ).toEqual({
      since: '2026-11-30T12:00:00.000Z',
      until: '2026-12-01T12:00:00.000Z',
    });
  });

  it('a bound past 9999 or before 0000 is INVALID_INPUT, never a RangeError or a +0xxxxx bound', () => {
    expect(() => statsWindow({ since: '100000000000d' }, now)).toThrow(invalid('since'));
    expect(() => statsWindow({ since: '1d', until: '+010000-01-01T00:00:00.000Z' }, now)).toThrow(
      invalid('until "+010000-01-01T00:00:00.000Z"'),
    );
    expect(() => statsWindow({ since: '2026-11-30T14:00:00' }, now)).toThrow(invalid('since'));
  });
});
