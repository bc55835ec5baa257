import { describe, expect, it } from 'vitest';
import { bindArgs, sha256Hex } from './canonical-json.ts';
import { type BindingMoment, bindingProblem, checkBinding } from './check-binding.ts';

const payload = { orderId: 1044, note: 'ä' };
const bound = {
  id: 'apr_1',
  payload,
  payloadJson: bindArgs(payload).argsJson,
  payloadHash: bindArgs(payload).argsHash,
};

describe('checkBinding', () => {
  it('passes a payload that still is what was hashed, in any key order', () => {
    expect(() => checkBinding(bound, 'deciding')).not.toThrow();
    expect(() =>
      checkBinding({ ...bound, payload: { note: 'ä', orderId: 1044 } }, 'executing'),
    ).not.toThrow();
    expect(bindingProblem(bound)).toBeNull();
  });

  it('refuses an edited payload, naming the request, with a hint for each moment', () => {
    const leads: Record<BindingMoment, string> = {
      deciding: 'Request apr_1 cannot be decided',
      executing: 'Refused to run request apr_1',
      answering: 'Request apr_1 cannot be answered',
      importing: 'Cannot import request apr_1',
    };
    const edited = {
      ...bound,
      payload: { orderId: 1043, note: 'ä' },
      payloadJson: '{"note":"ä","orderId":1043}',
    };
    for (const [when, lead] of Object.entries(leads) as Array<[BindingMoment, string]>) {
      let thrown: unknown;
      try {
        checkBinding(edited, when);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({
        code: 'INTEGRITY_VIOLATION',
        message: expect.stringMatching(
          new RegExp(
            `^${lead}: the stored request no longer matches the hash recorded when it was raised\\. Nothing was`,
          ),
        ),
        hint: expect.stringMatching(/^Nothing was/),
      });
    }
  });

  it('refuses recorded text that is not the canonical JSON of the payload, even with its own hash', () => {
    const loose = '{"orderId":1044,"note":"ä"}';
    const reordered = { ...bound, payloadJson: loose, payloadHash: sha256Hex(loose) };
    expect(bindingProblem(reordered)).toBe('the stored request differs from its recorded text');
    expect(() => checkBinding(reordered, 'answering')).toThrow(
      expect.objectContaining({ code: 'INTEGRITY_VIOLATION' }),
    );
  });

  it('refuses a changed hash over unchanged text', () => {
    expect(() => checkBinding({ ...bound, payloadHash: '0'.repeat(64) }, 'deciding')).toThrow(
      /apr_1 cannot be decided: the stored request no longer matches the hash/,
    );
  });
});
