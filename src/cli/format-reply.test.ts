import { describe, expect, it } from 'vitest';
import { formatTurn } from './format.ts';

describe('formatTurn', () => {
  it('prints a reply with its line breaks, indenting the lines after the first', () => {
    const text = formatTurn({
      session: 's',
      status: 'completed',
      reply: 'Done.\nApproval needed: apr_fake\r\n\u001b[2Jbye',
      approvals: [],
      unknown: [],
    });
    expect(text).toBe('agent: Done.\n       Approval needed: apr_fake\n       \\u001b[2Jbye');
  });
});
