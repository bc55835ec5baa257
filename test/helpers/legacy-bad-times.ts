import { expect } from 'vitest';
import { CorruptDataError } from '../../src/core/errors/corrupt-data-error.ts';
import { at } from '../../src/store/conformance/fixtures.ts';

/** A legacy checkpoint's waiting request and an answered one, as both SQL stores' tests seed them. */
export const legacyWaiting = {
  id: 'req_wait',
  port: 'manager-approval',
  data: { amount: 35 },
  createdAt: at(1),
};
export const legacyDone = {
  id: 'req_done',
  port: 'manager-approval',
  data: { amount: 12 },
  createdAt: at(1),
};

const inWait = 'request req_wait (run r, checkpoint cp-0, body state.requests[0].';

export interface BadLegacyTime {
  /** Fields of the waiting request changed to an unreadable time. */
  edit: Record<string, unknown>;
  /** The answer's time instead, when that is the bad one. */
  answeredAt?: string;
  /** Where the refusal must say the bad time is. */
  where: string;
  /** How it must show the bad value. */
  shown: string;
}

/** Times adoption cannot read without guessing: each must refuse with CORRUPT_DATA naming the row. */
export const badLegacyTimes: BadLegacyTime[] = [
  // No zone: the local time of whichever server wrote it.
  {
    edit: { expiresAt: '2030-01-01T00:08:20' },
    where: `${inWait}expiresAt)`,
    shown: '"2030-01-01T00:08:20"',
  },
  // A day February does not have: Date.parse would move it to 2 March.
  { edit: { createdAt: '2030-02-30T00:00:00.000Z' }, where: `${inWait}createdAt)`, shown: '"2030-02-30' },
  {
    edit: { createdAt: '-000001-12-31T00:00:00.000Z' },
    where: `${inWait}createdAt)`,
    shown: 'outside the years',
  },
  {
    edit: { createdAt: '+010000-01-01T00:00:00.000Z' },
    where: `${inWait}createdAt)`,
    shown: 'outside the years',
  },
  {
    edit: { createdAt: 1_893_456_001_000 },
    where: `${inWait}createdAt)`,
    shown: 'is 1893456001000, not a time',
  },
  { edit: { expiresAt: true }, where: `${inWait}expiresAt)`, shown: 'is true, not a time' },
  { edit: { createdAt: undefined }, where: `${inWait}createdAt)`, shown: 'is missing, not a time' },
  { edit: { expiresAt: { at: 'soon' } }, where: `${inWait}expiresAt)`, shown: 'is an object, not a time' },
  {
    edit: {},
    answeredAt: '2030-01-01 00:00:02',
    where: 'the answer to request req_done (workflow_answers row of run r, answered_at)',
    shown: '"2030-01-01 00:00:02"',
  },
];

/** What opening the store over `bad` must have thrown. */
export function expectAdoptionRefused(refused: unknown, { where, shown }: BadLegacyTime): void {
  expect(refused, where).toBeInstanceOf(CorruptDataError);
  expect(refused).toMatchObject({
    code: 'CORRUPT_DATA',
    message: expect.stringContaining(where),
    hint: expect.stringContaining('No request was adopted and nothing was removed'),
  });
  expect((refused as Error).message).toContain(shown);
}
