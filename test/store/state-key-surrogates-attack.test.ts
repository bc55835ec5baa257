import { describe, expect, it } from 'vitest';
import { everyBackend } from '../helpers/every-backend.ts';
import { postgresForTests } from '../helpers/postgres.ts';

const url = await postgresForTests();
const backends = everyBackend('attack_state', url);

/*
 * d64c934: PostgreSQL's coalesced reads look a key up as storedText(keyOf(key)). The state
 * read's keyOf joins namespace and key into one string, so a namespace ending in a lone high
 * surrogate and a key starting with a lone low one make a well-formed pair once joined:
 * storedText leaves it (an emoji), while the row comes back with U+FFFD U+FFFD.
 */
for (const [name, make] of Object.entries(backends)) {
  describe.skipIf(url === null && name === 'postgres')(`state keys with lone surrogates: ${name}`, () => {
    it('a namespace ending in a high surrogate and a key starting with a low one are found again', async () => {
      const store = await make();
      try {
        await store.setState('a\ud83d', '\ude00b', 1);
        await store.setState('c\ud800', 'd', 2);
        expect(await store.getState('a\ud83d', '\ude00b')).toBe(1);
        expect(await store.getState('a\ufffd', '\ufffdb')).toBe(1);
        expect(await store.getState('a😀', 'b')).toBeUndefined();
        // Read together in one turn, too.
        expect(
          await Promise.all([
            store.getState('a\ud83d', '\ude00b'),
            store.getState('c\ud800', 'd'),
            store.getState('c\ufffd', 'd'),
            store.getState('missing', 'x'),
          ]),
        ).toEqual([1, 2, 2, undefined]);
      } finally {
        await store.close();
      }
    });

    it('100 keys read in one turn (two statements), with duplicates and unknown keys', async () => {
      const store = await make();
      try {
        for (let i = 0; i < 50; i++) await store.setState('many', `k${i}`, i);
        const keys = [...Array.from({ length: 70 }, (_, i) => `k${i}`), 'k3', 'k3', 'k49', 'nope', ''];
        expect(await Promise.all(keys.map((key) => store.getState('many', key)))).toEqual(
          keys.map((key) => {
            const i = Number(key.slice(1));
            return key.startsWith('k') && i < 50 ? i : undefined;
          }),
        );
      } finally {
        await store.close();
      }
    });
  });
}
