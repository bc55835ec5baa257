import { describe, expect, it } from 'vitest';
import { decodeKeysetCursor, encodeKeysetCursor, filtersDigest } from './keyset-cursor.ts';

const at = '2030-01-01T00:00:00.000Z';
const code = (run: () => unknown) => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('keyset cursors are bound to their order and filters', () => {
  it('reads back the position under the same order and filters', () => {
    const cursor = encodeKeysetCursor('oldest', at, 'apr_1', { status: 'pending', tool: 'refund' });
    expect(
      decodeKeysetCursor(cursor, { order: 'oldest', filters: { tool: 'refund', status: 'pending' } }),
    ).toEqual({ key: at, id: 'apr_1' });
    // Opaque to callers: base64url, no filter in the clear.
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(cursor, 'base64url').toString('utf8')).not.toContain('refund');
  });

  it('writes one canonical form: key order, undefined and null are nothing; an array is a set', () => {
    const digest = filtersDigest({ status: 'pending', tool: 'refund' });
    expect(filtersDigest({ tool: 'refund', status: 'pending' })).toBe(digest);
    expect(filtersDigest({ tool: 'refund', status: 'pending', session: undefined, run: null })).toBe(digest);
    expect(filtersDigest({})).toBe(filtersDigest({ status: undefined }));
    expect(filtersDigest({ statuses: ['a', 'b', 'a'] })).toBe(filtersDigest({ statuses: ['b', 'a'] }));
    expect(digest).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it('tells apart what selects other rows: a value, a name, empty from absent, a type, an empty set', () => {
    const digests = [
      {},
      { status: 'pending' },
      { status: 'approved' },
      { tool: 'pending' },
      { status: '' },
      { status: 'pending', tool: 'refund' },
      { limit: 1 },
      { limit: '1' },
      { flag: true },
      { statuses: [] },
      { statuses: ['a'] },
      { statuses: ['a', 'b'] },
      // Neither a separator nor a quote inside a value can make two sets write the same text.
      { a: 'x","b":"y' },
      { a: 'x', b: 'y' },
    ].map((filters) => filtersDigest(filters));
    expect(new Set(digests).size).toBe(digests.length);
  });

  it('refuses other filters, another order (checked first) and the unbound version 1, each saying what to do', () => {
    const cursor = encodeKeysetCursor('runs.newest', at, 'r-1', { customer: 'c-100' });
    expect(() =>
      decodeKeysetCursor(cursor, { order: 'runs.newest', filters: { customer: 'c-200' } }),
    ).toThrow(
      'This cursor was handed out for other filters. Start again from the first page without a cursor, or send the same filters as the page that handed it out.',
    );
    expect(() => decodeKeysetCursor(cursor, { order: 'runs.newest', filters: {} })).toThrow(/other filters/);
    expect(() => decodeKeysetCursor(cursor, { order: 'runs.oldest', filters: {} })).toThrow(
      /belongs to another list or sort/,
    );
    const unbound = Buffer.from(JSON.stringify([1, 'runs.newest', at, 'r-1'])).toString('base64url');
    expect(() => decodeKeysetCursor(unbound, { order: 'runs.newest', filters: {} })).toThrow(
      /earlier version of countersign.*Start again from the first page without a cursor/,
    );
    for (const edited of [`${cursor}x`, `${cursor}xy`, cursor.slice(0, -1), `${cursor}=`, '', 'W'])
      expect({
        edited,
        code: code(() =>
          decodeKeysetCursor(edited, { order: 'runs.newest', filters: { customer: 'c-100' } }),
        ),
      }).toEqual({
        edited,
        code: 'INVALID_CURSOR',
      });
  });
});
