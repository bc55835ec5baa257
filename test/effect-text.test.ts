import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../src/agent/create-agent.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/store.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { requestPort } from '../src/workflow/request-port.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from './helpers/postgres.ts';
import { scriptModel } from './helpers/script-model.ts';

// A customer's words reach an effect preview through the call's arguments. A NUL or half an
// emoji in them was stored as written on SQLite and in memory (where search then stopped at
// the NUL, or matched half an emoji) and refused by PostgreSQL, so the same chat raised a
// request on two backends and failed on the third. The preview is now made storable before
// it is bound: every backend shows, finds and runs the same text.
const SHOWN = 'Send "before\uFFFDafter" to \uFFFD the team.';

const stores: Array<{ name: string; open: () => Promise<{ store: Store; done: () => Promise<void> }> }> = [
  { name: 'memory', open: async () => ({ store: await openStore('memory:'), done: async () => {} }) },
  {
    name: 'sqlite',
    open: async () => ({
      store: await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'cs-effect-')), 'store.db')}`, {
        env: {},
      }),
      done: async () => {},
    }),
  },
  {
    name: 'postgres',
    open: async () => {
      if ((await postgresForTests()) === null) throw new Error('PostgreSQL is not reachable');
      const schema = freshSchema('effect_text');
      return { store: await openStore(storeUrl(schema), { env: {} }), done: () => dropSchema(schema) };
    },
  },
];

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

const runs = (await postgresForTests()) === null ? stores.filter((s) => s.name !== 'postgres') : stores;

describe.each(runs)('an effect preview holding a NUL or half an emoji ($name)', ({ open }) => {
  it('is stored as U+FFFD, found by search, and the approved call still runs', async () => {
    const { store, done } = await open();
    cleanups.push(async () => {
      await store.close();
      await done();
    });
    const sent: string[] = [];
    const send = defineTool({
      name: 'send_message',
      description: 'Send a message.',
      input: z.object({ text: z.string() }),
      approval: 'always',
      effect: (args) => `Send "${args.text}" to ${'\ud83d'} the team.`,
      execute: (args) => {
        sent.push(args.text);
        return 'sent';
      },
    });
    const model = scriptModel([[{ tool: 'send_message', args: { text: 'before\u0000after' } }], ['Sent.']]);
    const agent = createAgent({ name: 'notes', instructions: 'Help.', tools: [send], model, store });
    const turn = await agent.chat('s1', 'Tell the team.', { principal: 'c-1' });
    const id = turn.approvals[0]!.id;
    expect((await store.getApproval(id))?.effect).toBe(SHOWN);
    const found = await store.pageRequests({ limit: 10, text: 'after" to' });
    expect(found.items.map((request) => request.id)).toEqual([id]);
    expect((await agent.approve(id, { by: 'alice' })).status).toBe('completed');
    // The arguments are the model's, unchanged: only the preview is made storable.
    expect(sent).toEqual(['before\u0000after']);
  });
});

describe("a port's preview", () => {
  it('is made storable the same way, from a sentence or from the request data', () => {
    const context = { run: 'r1', workflow: 'refund', customer: 'c-1' };
    const fromData = requestPort('approve', {
      request: z.object({ note: z.string() }),
      response: z.object({ ok: z.boolean() }),
      effect: (data) => `Refund with note "${data.note}".`,
    });
    expect(fromData.effectOf({ note: 'a\u0000b\udc00' }, context)).toBe('Refund with note "a\uFFFDb\uFFFD".');
    const sentence = requestPort('approve', {
      request: z.object({}),
      response: z.object({ ok: z.boolean() }),
      effect: 'Refund \ud83d\ude00 in full.',
    });
    // A whole emoji (a surrogate pair) is kept.
    expect(sentence.effectOf({}, context)).toBe('Refund \ud83d\ude00 in full.');
  });
});
