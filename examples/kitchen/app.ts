import { z } from 'zod';
import { createAgent, defineTool, type ToolState } from '../../src/authoring.ts';

const initialList = ['milk', 'bread'];

async function loadList(state: ToolState): Promise<string[]> {
  return ((await state.get('shopping-list')) as string[] | undefined) ?? [...initialList];
}

export const getShoppingList = defineTool({
  name: 'get_shopping_list',
  description: 'Read the household shopping list.',
  input: z.object({}),
  approval: 'never',
  execute: async (_args, ctx) => ({ items: await loadList(ctx.state) }),
});

export const addToShoppingList = defineTool({
  name: 'add_to_shopping_list',
  description: 'Add an item to the shopping list. A person approves every addition.',
  input: z.object({
    item: z.string().min(1).describe('What to buy, e.g. "eggs"'),
    quantity: z.string().min(1).describe('How much, e.g. "12" or "500 g"'),
  }),
  approval: 'always',
  // The model proposed 12, the person meant 6: they may correct the quantity before
  // approving (the item stays as proposed). The edited call gets a new preview and runs.
  editable: ['quantity'],
  // Adding twice would put the item on the list twice: after a crash, a person decides.
  idempotent: false,
  effect: async ({ item, quantity }, ctx) => {
    const list = await loadList(ctx.state);
    return `Add "${quantity} ${item}" to the shopping list (it has ${list.length} items now: ${list.join(', ')}).`;
  },
  execute: async ({ item, quantity }, ctx) => {
    const list = await loadList(ctx.state);
    list.push(`${quantity} ${item}`);
    await ctx.state.set('shopping-list', list);
    return {
      ok: true,
      message: `Added ${quantity} ${item}; the list now has ${list.length} items: ${list.join(', ')}.`,
    };
  },
});

export const kitchenAgent = createAgent({
  name: 'kitchen',
  instructions: 'You keep the household shopping list. Adding an item needs the person to approve it.',
  tools: [getShoppingList, addToShoppingList],
  // A personal assistant: the person chatting approves their own list, so separation of
  // duties (someone else decides) is switched off for it.
  selfApproval: true,
  // The person approving is the one chatting: a new message means they moved on.
  onNewMessage: 'reject',
});

export const agents = [kitchenAgent];
