import type { JsonValue } from '../../core/json.ts';

/** Application state of the tools (e.g. the bookstore's orders), namespaced key/value. */
export interface AppState {
  getState(namespace: string, key: string): Promise<JsonValue | undefined>;
  setState(namespace: string, key: string, value: JsonValue): Promise<void>;
}
