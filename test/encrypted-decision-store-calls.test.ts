import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BENCH_ENCRYPTION_KEYS, timeLoop } from '../bench/agent-loop.ts';
import { decisionAgent } from '../bench/decision-agent.ts';
import { createEncryption } from '../src/crypto/encryption.ts';
import { envKeyProvider } from '../src/crypto/env-key-provider.ts';
import type { KeyNeed } from '../src/crypto/key-not-ready.ts';
import { createRequestDesk } from '../src/requests/request-desk.ts';
import { decideToolCall } from '../src/server/decide-request.ts';
import type { PayloadCodec } from '../src/store/codec.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { countingStore } from './helpers/counting-store.ts';

/**
 * What encryption at rest adds to a decision and to an agent step in store calls: nothing,
 * once the customer's data key is loaded. The calls are counted on the backend itself, under
 * the keyring's wrapper, so a KeyNotReady retry (which re-runs a whole store call) or an owner
 * look-up (`scopeOwner` reads a row) would show up here. The bench (bench/encryption.ts)
 * measures the CPU; this pins the count, which does not drift with the machine's load.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface CodecCounts {
  sealed: number;
  opened: number;
  openedFromCache: number;
}

function openStore(encrypted: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-enc-calls-'));
  dirs.push(dir);
  const encryption = createEncryption(envKeyProvider(BENCH_ENCRYPTION_KEYS));
  const codecCounts: CodecCounts = { sealed: 0, opened: 0, openedFromCache: 0 };
  const inner = encryption.codec;
  // The encrypting codec, counted: how many values a decision seals and opens.
  const codec: PayloadCodec = {
    ...inner,
    encode(value, scope) {
      codecCounts.sealed += 1;
      return inner.encode(value, scope);
    },
    decode(text, where) {
      codecCounts.opened += 1;
      if (encryption.keyring.openedTexts.get(text) !== undefined) codecCounts.openedFromCache += 1;
      return inner.decode(text, where);
    },
  };
  const backend = createSqliteStore({ path: join(dir, 'store.db'), ...(encrypted ? { codec } : {}) });
  const counted = countingStore(backend);
  const store = encrypted ? encryption.wrap(counted.store) : counted.store;
  const needs: KeyNeed[] = [];
  const ready = encryption.keyring.ready.bind(encryption.keyring);
  encryption.keyring.ready = (need) => {
    needs.push(need);
    return ready(need);
  };
  const reset = () => {
    counted.reset();
    needs.length = 0;
    Object.assign(codecCounts, { sealed: 0, opened: 0, openedFromCache: 0 });
  };
  return { store, calls: counted.calls, needs, codecCounts, reset };
}

/** Two waiting requests (two sessions, so two data keys); the first decided as a warm-up. */
async function decideSecond(encrypted: boolean) {
  const opened = openStore(encrypted);
  const agent = decisionAgent(opened.store);
  const first = (await agent.chat('first', 'Refund order 1044, please.')).approvals[0]!.id;
  const second = (await agent.chat('second', 'Refund order 1045, please.')).approvals[0]!.id;
  const requests = createRequestDesk({ store: opened.store, agentFor: () => agent });
  const decide = (id: string) =>
    decideToolCall({ requests }, { name: 'alice', roles: [], via: 'token' }, id, {
      approved: true,
      extra: {},
    });
  // The first decision in a new store creates the store's own key (decisions, app state).
  expect((await decide(first)).status).toBe('completed');
  opened.reset();
  expect((await decide(second)).status).toBe('completed');
  const result = { calls: opened.calls(), needs: [...opened.needs], codec: { ...opened.codecCounts } };
  await opened.store.close();
  return result;
}

describe('store calls with encryption at rest on, beside off', () => {
  it('an HTTP decision on a warm key makes the same store calls as without encryption, and no retry', async () => {
    const off = await decideSecond(false);
    const on = await decideSecond(true);
    console.log('store calls of one decision, encryption off / on:', off.calls, on.calls, on.codec);
    expect(on.calls).toEqual(off.calls);
    // No KeyNotReady: nothing waited for a key, so no store call ran twice.
    expect(on.needs).toEqual([]);
    // Every payload it wrote was sealed, and every one it read back was written by this
    // process, so none was decrypted again.
    expect(on.codec.sealed).toBeGreaterThanOrEqual(7);
    expect(on.codec.openedFromCache).toBe(on.codec.opened);
  });

  it('an agent step makes the same store calls; only the session key is created, once', async () => {
    const steps = 50;
    const counts = [];
    for (const encrypted of [false, true]) {
      const opened = openStore(encrypted);
      await timeLoop(opened.store, steps);
      counts.push({ calls: opened.calls(), needs: [...opened.needs], codec: { ...opened.codecCounts } });
      await opened.store.close();
    }
    const [off, on] = counts as [(typeof counts)[0], (typeof counts)[0]];
    // The first step meets the session's key not loaded: one ready, one commitStep re-run,
    // and the key created (looked up, inserted). Then every step passes straight through.
    expect(on.needs).toEqual([{ scope: 'session:bench' }]);
    const { liveDataKey, insertDataKey, ...rest } = on.calls;
    expect({ liveDataKey, insertDataKey }).toEqual({ liveDataKey: 1, insertDataKey: 1 });
    expect(rest).toEqual({ ...off.calls, commitStep: off.calls.commitStep! + 1 });
    expect(on.codec.sealed).toBe(2 * steps + 3);
  });
});
