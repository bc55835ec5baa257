import type { JsonObject, JsonValue } from '../../core/json.ts';

/** How the demo model names a call in a reply: once for success, once for "not done". */
export function describeCall(tool: string, args: JsonObject): { done: string; notDone: string } {
  const arg = (key: string) => show(args[key]);
  switch (tool) {
    case 'cancel_order':
      return {
        done: `Cancelled order ${arg('orderId')}`,
        notDone: `I did not cancel order ${arg('orderId')}`,
      };
    case 'get_order_status':
      return { done: `Order ${arg('orderId')}`, notDone: `I could not check order ${arg('orderId')}` };
    case 'search_books':
      return {
        done: `Books about "${arg('query')}"`,
        notDone: `I did not search for books about "${arg('query')}"`,
      };
    case 'add_to_cart':
      return {
        done: `Added ${arg('bookId')} (quantity ${arg('quantity')}) to your cart`,
        notDone: `I did not add ${arg('bookId')} to your cart`,
      };
    case 'get_shopping_list':
      return { done: 'Your shopping list', notDone: 'I could not read your shopping list' };
    case 'add_to_shopping_list':
      return {
        done: `Added ${arg('item')} (${arg('quantity')}) to your shopping list`,
        notDone: `I did not add ${arg('item')} (${arg('quantity')}) to your shopping list`,
      };
    default:
      return { done: `${tool} finished`, notDone: `I did not run ${tool}` };
  }
}

/** What the person would be asking for, for "I can't … here". */
export function describeAbility(tool: string): string {
  switch (tool) {
    case 'cancel_order':
      return 'cancel orders';
    case 'get_order_status':
      return 'check the status of orders';
    case 'search_books':
      return 'search for books';
    case 'add_to_cart':
      return 'add books to a cart';
    case 'get_shopping_list':
      return 'read a shopping list';
    case 'add_to_shopping_list':
      return 'add to a shopping list';
    default:
      return `use ${tool}`;
  }
}

function show(value: JsonValue | undefined): string {
  if (value === undefined) return '?';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
