import { expect } from 'vitest';
import type { JsonValue } from '../../core/json.ts';
import type { AppState } from '../ports/app-state.ts';

/**
 * Values that are not plain JSON, through AppState: both conformance suites (the Store's and
 * the CheckpointStore's) run this on each of their backends. What SQL keeps once stored as
 * JSON text is what every backend reads back; what has no JSON form is INVALID_INPUT, and
 * nothing is written.
 */
export async function expectPlainJsonState(state: AppState): Promise<void> {
  const cycle: Record<string, unknown> = { id: 1 };
  cycle.self = cycle;
  const kept: Array<[string, unknown, JsonValue]> = [
    ['date', new Date(0), '1970-01-01T00:00:00.000Z'],
    ['nan', Number.NaN, null],
    ['bigint', 12345678901234567890n, '12345678901234567890'],
    [
      'mixed',
      { at: new Date(0), gone: undefined, fn: () => 1, list: [undefined, Number.POSITIVE_INFINITY, 2] },
      { at: '1970-01-01T00:00:00.000Z', list: [null, null, 2] },
    ],
  ];
  for (const [key, value, json] of kept) {
    await state.setState('values', key, value as JsonValue);
    expect(await state.getState('values', key), key).toEqual(json);
    expect(await state.claimState('claims', key, value as JsonValue), key).toEqual({
      won: true,
      value: json,
    });
  }
  const refused: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['function', () => 1],
    ['cycle', cycle],
  ];
  for (const [key, value] of refused) {
    await expect(state.setState('values', key, value as JsonValue), key).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('cannot be stored'),
    });
    await expect(state.claimState('claims', key, value as JsonValue), key).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(await state.getState('values', key), key).toBeUndefined();
    expect(await state.getState('claims', key), key).toBeUndefined();
  }
}
