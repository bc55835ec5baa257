import { KeyNotReady } from './key-not-ready.ts';
import type { Keyring } from './keyring.ts';

const KEYRING = Symbol.for('countersign.store.keyring');
// Each round loads one key; a call touching more owners than this is not one call's work.
const ROUNDS = 32;

/** The keyring of a store opened with encryption keys, or null (erase uses it to forget keys). */
export function keyringOf(store: object): Keyring | null {
  return ((store as Record<symbol, unknown>)[KEYRING] as Keyring | undefined) ?? null;
}

/**
 * Wraps a store whose backend was given the encrypting codec: a call that finds a data key
 * not loaded yet (KeyNotReady, thrown before anything is written) waits for the keyring to
 * load it and runs again. Once a process has met a customer's key, their calls pass straight
 * through. A proxy, like the guard, so every port the backend is (Store, CheckpointStore,
 * Outbox, DataKeys) stays reachable as it is.
 */
export function withKeyring<S extends object>(store: S, keyring: Keyring): S {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === KEYRING) return keyring;
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(property);
      if (fn === undefined) {
        fn = retrying(value as (...args: unknown[]) => unknown, target, keyring);
        if (property === 'ensureSession' || property === 'getSession')
          fn = notingSession(fn as Method, keyring, (result) => result);
        if (property === 'getApprovalWithSession')
          fn = notingSession(
            fn as Method,
            keyring,
            (result) => (result as { session: unknown } | null)?.session,
          );
        wrapped.set(property, fn);
      }
      return fn;
    },
  });
}

type Method = (...args: unknown[]) => unknown;

/** A session's principal seen on the way by: its first step needs no look-up of its owner. */
function notingSession(method: Method, keyring: Keyring, sessionOf: (result: unknown) => unknown): Method {
  return async (...args: unknown[]) => {
    const result = await method(...args);
    const session = sessionOf(result) as { id: string; principal: string | null } | null | undefined;
    if (session !== null && typeof session === 'object') keyring.noteSession(session.id, session.principal);
    return result;
  };
}

function retrying(method: (...args: unknown[]) => unknown, target: object, keyring: Keyring) {
  return function call(...args: unknown[]): unknown {
    const attempt = (round: number): unknown => {
      let result: unknown;
      try {
        result = method.apply(target, args);
      } catch (error) {
        if (!(error instanceof KeyNotReady) || round >= ROUNDS) throw error;
        return keyring.ready(error.need).then(() => attempt(round + 1));
      }
      if (!(result instanceof Promise)) return result;
      return result.catch((error: unknown) => {
        if (!(error instanceof KeyNotReady) || round >= ROUNDS) throw error;
        return keyring.ready(error.need).then(() => attempt(round + 1));
      });
    };
    return attempt(0);
  };
}
