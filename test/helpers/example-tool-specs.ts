import type { JSONSchema7 } from '@ai-sdk/provider';
import type { ModelToolSpec } from '../../src/model/to-model-tools.ts';

/*
 * The example apps' tool shapes as the demo model expects them. The real apps define
 * their own tools; these only need the same names and argument shapes.
 */

const object = (
  properties: Record<string, JSONSchema7>,
  required = Object.keys(properties),
): JSONSchema7 => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

export const bookstoreToolSpecs: ModelToolSpec[] = [
  {
    name: 'search_books',
    description: 'Search the catalogue.',
    inputSchema: object({ query: { type: 'string' } }),
  },
  {
    name: 'get_order_status',
    description: 'Look up an order.',
    inputSchema: object({ orderId: { type: 'integer' } }),
  },
  {
    name: 'add_to_cart',
    description: 'Add a book to the cart.',
    inputSchema: object({ bookId: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } }),
  },
  {
    name: 'cancel_order',
    description: 'Cancel an order.',
    inputSchema: object({ orderId: { type: 'integer' } }),
  },
];

export const kitchenToolSpecs: ModelToolSpec[] = [
  { name: 'get_shopping_list', description: 'Read the shopping list.', inputSchema: object({}) },
  {
    name: 'add_to_shopping_list',
    description: 'Add an item to the shopping list.',
    inputSchema: object({ item: { type: 'string' }, quantity: { type: 'string' } }),
  },
];
