import { describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../examples/bookstore/app.ts';
import { exportSession, importSession } from '../src/agent/session-transfer.ts';
import { canonicalJson, MAX_CANONICAL_DEPTH } from '../src/core/canonical-json.ts';
import { InvalidInputError } from '../src/core/errors/invalid-input-error.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../src/core/json-depth.ts';
import { jsonValue } from '../src/core/json-schema.ts';
import { parseJsonText } from '../src/core/parse-json.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';

/** `depth` nested arrays around 1, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
}

describe('JSON depth is bounded wherever JSON comes in or is hashed', () => {
  it('measures depth without recursion, and ends on cycles', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan([], 0)).toBe(true);
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan(nested(1_000_000), 64)).toBe(true);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(nestsDeeperThan(cycle, 64)).toBe(true);
  });

  it('canonicalJson refuses past its limit with INVALID_INPUT instead of overflowing the stack', () => {
    expect(MAX_CANONICAL_DEPTH).toBeGreaterThan(MAX_JSON_DEPTH);
    expect(canonicalJson(nested(MAX_CANONICAL_DEPTH))).toContain('{"k":');
    for (const depth of [MAX_CANONICAL_DEPTH + 1, 100_000]) {
      expect(() => canonicalJson(nested(depth))).toThrow(InvalidInputError);
      expect(() => canonicalJson(nested(depth))).toThrow(`deeper than ${MAX_CANONICAL_DEPTH} levels`);
    }
  });

  it('the one JSON schema accepts 64 levels and refuses 65 (and 100,000) with the limit in the message', () => {
    expect(jsonValue.safeParse(nested(64)).success).toBe(true);
    for (const depth of [65, 100_000]) {
      const result = jsonValue.safeParse(nested(depth));
      expect(result.success).toBe(false);
      expect(result.error!.issues[0]!.message).toContain('deeper than 64 levels');
    }
    expect(jsonValue.safeParse({ a: [1, 'x', null, true, { b: 2 }] }).data).toEqual({
      a: [1, 'x', null, true, { b: 2 }],
    });
    expect(jsonValue.safeParse({ a: () => 1 }).success).toBe(false);
  });

  it('parseJsonText names what was too deep', () => {
    expect(() => parseJsonText('['.repeat(30_000), 'The body')).toThrow('The body is not valid JSON.');
    expect(() => parseJsonText(`${'['.repeat(65)}${']'.repeat(65)}`, 'The body')).toThrow(
      'The body nests deeper than 64 levels',
    );
    expect(parseJsonText(`${'['.repeat(64)}${']'.repeat(64)}`, 'The body')).toBeDefined();
  });

  it('a session import with too-deep arguments is refused before anything is written', async () => {
    const store = createMemoryStore();
    const agent = bookstoreAgent.with({ store, model: createDemoModel() });
    await agent.chat('s-deep', 'Please cancel my order 1044.', { principal: 'c-100' });
    const exported = (await exportSession(store, 's-deep')) as unknown as {
      messages: Array<{ message: { role: string; calls?: Array<{ args: unknown }> } }>;
    };
    const assistant = exported.messages.find((entry) => entry.message.calls?.length)!;
    assistant.message.calls![0]!.args = nested(5_000);
    const target = createMemoryStore();
    const refused = importSession(target, exported);
    await expect(refused).rejects.toThrow(InvalidInputError);
    await expect(importSession(target, exported)).rejects.toThrow('deeper than 64 levels');
    expect(await target.getSession('s-deep')).toBeNull();
  });
});
