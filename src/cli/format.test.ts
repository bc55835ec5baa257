import { describe, expect, it } from 'vitest';
import { readableJson } from '../core/canonical-json.ts';
import { oneLine } from './format.ts';

describe('output that a person reads', () => {
  it('escapes line breaks, terminal escapes and direction overrides in free text', () => {
    const hostile = 'ok\n\u001b[2J\u001b]0;owned\u0007 \u202eevil\u202c \u009b';
    const shown = oneLine(hostile);
    for (const raw of ['\n', '\r', '\u001b', '\u0007', '\u202e', '\u202c', '\u009b'])
      expect(shown).not.toContain(raw);
    expect(shown).toBe('ok\\n\\u001b[2J\\u001b]0;owned\\u0007 \\u202eevil\\u202c \\u009b');
  });

  it('keeps non-ASCII readable in arguments but escapes what could mislead a reader', () => {
    expect(readableJson({ item: 'crème fraîche', note: 'a\nb' })).toBe(
      '{"item":"crème fraîche","note":"a\\nb"}',
    );
    expect(readableJson({ to: 'user\u202egnp.exe' })).toBe('{"to":"user\\u202egnp.exe"}');
    expect(readableJson({ x: '\u007f\u2028' })).toBe('{"x":"\\u007f\\u2028"}');
  });
});
