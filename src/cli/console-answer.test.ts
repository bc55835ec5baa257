import { describe, expect, it } from 'vitest';
import { fieldValue, readConsoleAnswer } from './console-answer.ts';

describe('readConsoleAnswer', () => {
  const read = (text: string | null, editable = true) => readConsoleAnswer(text, { editable });

  it('reads y/n/e and quitting', () => {
    expect(read('y')).toEqual({ kind: 'approve' });
    expect(read(' YES ')).toEqual({ kind: 'approve' });
    expect(read('n')).toEqual({ kind: 'reject' });
    expect(read('No')).toEqual({ kind: 'reject' });
    expect(read('e')).toEqual({ kind: 'edit' });
    expect(read('e', false)).toEqual({ kind: 'unclear', text: 'e' });
    expect(read('')).toEqual({ kind: 'quit' });
    expect(read('exit')).toEqual({ kind: 'quit' });
    expect(read(null)).toEqual({ kind: 'quit' });
  });

  it('never takes a typo for a new message: a lone unrecognised word asks again', () => {
    for (const typo of ['ys', 'yy', 'u', 'nope', 'approve', 'y.']) {
      expect(read(typo)).toEqual({ kind: 'unclear', text: typo });
    }
  });

  it('takes two words or more as a new message', () => {
    expect(read('Actually, make that six')).toEqual({ kind: 'message', text: 'Actually, make that six' });
    expect(read('any update?  ')).toEqual({ kind: 'message', text: 'any update?' });
  });
});

describe('fieldValue', () => {
  it('keeps strings strings and reads other fields as JSON', () => {
    expect(fieldValue('6', '12')).toBe('6');
    expect(fieldValue('6', 12)).toBe(6);
    expect(fieldValue('true', false)).toBe(true);
    expect(fieldValue('six', 12)).toBe('six');
  });
});
