import type { JsonValue } from '../../core/json.ts';
import { storedText } from '../../core/storable-text.ts';
import type { AppState } from '../ports/app-state.ts';
import { stateValue } from '../state-value.ts';

const copy = <T>(value: T): T => structuredClone(value);

/** Process-local application state, for the memory Store and the memory CheckpointStore. */
export function createMemoryAppState(): AppState {
  const state = new Map<string, JsonValue>();
  // JSON of the pair: no separator character can make two different pairs collide. Each part
  // as a database column holds it (storedText), so a key finds what it finds on SQLite.
  const stateKey = (namespace: string, key: string) =>
    JSON.stringify([storedText(namespace), storedText(key)]);
  return {
    async getState(namespace, key) {
      return copy(state.get(stateKey(namespace, key)));
    },

    async setState(namespace, key, value) {
      state.set(stateKey(namespace, key), stateValue(namespace, key, value));
    },

    async claimState(namespace, key, value) {
      const offered = stateValue(namespace, key, value);
      const existing = state.get(stateKey(namespace, key));
      if (existing !== undefined) return { won: false, value: copy(existing) };
      state.set(stateKey(namespace, key), offered);
      return { won: true, value: copy(offered) };
    },
  };
}
