// A complete library example: one tool that needs approval, a session that waits, and a
// decision taken later — possibly by another process. Run: node refund-desk.ts
import { z } from 'zod';
import { createAgent, createDemoModel, createSqliteStore, defineTool, listPending } from '../../src/index.ts';

const cancelOrder = defineTool({
  name: 'cancel_order',
  description: "Cancel one of the signed-in customer's orders.",
  input: z.object({ orderId: z.number().int() }),
  approval: 'always', // the default; 'never' or (args, ctx) => boolean also work
  standing: false, // every cancellation is seen by a person
  authorize: ({ orderId }, ctx) => (ctx.principal === 'c-100' && orderId === 1044 ? true : 'not your order'),
  effect: ({ orderId }) => `Cancel order ${orderId} (2 books, 51.90) and refund the card.`,
  execute: ({ orderId }, ctx) => ({
    ok: true,
    message: `Order ${orderId} cancelled (key ${ctx.idempotencyKey}).`,
  }),
});

const store = createSqliteStore({ path: '.countersign/refund-desk.db' });
const agent = createAgent({
  name: 'refund-desk',
  instructions: 'You help customers with their orders.',
  tools: [cancelOrder],
  model: createDemoModel(), // or any AI SDK model: openai('gpt-4.1'), anthropic('claude-…'), …
  store,
});

const session = `demo-${Date.now()}`;
const turn = await agent.chat(session, 'Please cancel my order 1044.', { principal: 'c-100' });
// turn.approvals[0] holds the stored call: tool, args, effect, expiry.
console.log(turn.status, turn.approvals[0]?.tool, turn.approvals[0]?.args);

// Hours later, anywhere: list what waits and decide by id. Only the stored call can run.
const [request] = await listPending(store, { session });
if (!request) throw new Error('Nothing is waiting.');
const done = await agent.approve(request.id, { by: 'alice@support' });
console.log(done.status, '—', done.reply);
await store.close();
