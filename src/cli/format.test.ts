import { describe, expect, it } from 'vitest';
import { readableJson } from '../core/canonical-json.ts';
import { formatApproval, oneLine } from './format.ts';

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

  it('shows zero-width, isolate and other invisible characters in the effect line and in messages', () => {
    expect(oneLine('a\u200bb\u2066c\u2069\u0000\ufeff\u{e0041}')).toBe(
      'a\\u200bb\\u2066c\\u2069\\u0000\\ufeff\\udb40\\udc41',
    );
    expect(readableJson({ to: 'a\u200bb' })).toBe('{"to":"a\\u200bb"}');
    const shown = formatApproval({
      id: 'apr_1',
      kind: 'tool-call',
      run: null,
      agent: 'files',
      callId: 'call-1',
      customer: null,
      requiredRole: null,
      claim: null,
      escalatedTo: null,
      nudges: null,
      status: 'pending',
      raisedBy: null,
      argsHash: 'h',
      createdAt: new Date().toISOString(),
      decision: null,
      integrity: 'ok',
      editable: [],
      approvalsNeeded: 1,
      approvals: [],
      edit: null,
      tool: 'send_file',
      args: { name: 'report\u202etxt.exe' },
      effect: 'Send the file report\u202etxt.exe',
      session: 's1',
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(shown).not.toContain('\u202e');
    expect(shown).toContain('  effect:  Send the file report\\u202etxt.exe');
  });
});
