import { z } from 'zod';
import { defineTool } from '../../src/authoring.ts';
import { books, money, orderTotal } from './data.ts';
import { loadOrder, ownOrder, saveOrder } from './orders.ts';

const orderId = z.number().int().positive().describe('The order number, e.g. 1044');

export const searchBooks = defineTool({
  name: 'search_books',
  description: 'Search the catalogue by title, author or topic.',
  input: z.object({ query: z.string().min(1).describe('Words to look for') }),
  approval: 'never',
  execute: ({ query }) => {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const hits = books.filter((book) => {
      const text = `${book.title} ${book.author} ${book.topics.join(' ')}`.toLowerCase();
      return words.some((word) => text.includes(word));
    });
    return {
      books: hits.map(({ id, title, author, price }) => ({ id, title, author, price: money(price) })),
    };
  },
});

export const getOrderStatus = defineTool({
  name: 'get_order_status',
  description: "Look up the status of one of the signed-in customer's orders.",
  input: z.object({ orderId }),
  approval: 'never',
  authorize: ({ orderId: id }, ctx) => ownOrder(ctx.state, ctx.principal, id),
  execute: async ({ orderId: id }, ctx) => {
    const order = (await loadOrder(ctx.state, id))!;
    return {
      orderId: id,
      status: order.status,
      total: money(orderTotal(order)),
      message: `Order ${id} is ${order.status}.`,
    };
  },
});

export const addToCart = defineTool({
  name: 'add_to_cart',
  description: "Add a book to the signed-in customer's cart. Reversible, so it needs no approval.",
  input: z.object({
    bookId: z.string().describe('Book id such as b-1'),
    quantity: z.number().int().min(1).max(20).default(1),
  }),
  approval: 'never',
  // Reversible, so no approval; still every addition goes to the audit trail.
  logged: true,
  execute: async ({ bookId, quantity }, ctx) => {
    const book = books.find((b) => b.id === bookId);
    if (!book) return { ok: false, message: `There is no book ${bookId}.` };
    const key = `cart:${ctx.principal ?? ctx.session}`;
    const cart = ((await ctx.state.get(key)) as Record<string, number> | undefined) ?? {};
    cart[bookId] = (cart[bookId] ?? 0) + quantity;
    await ctx.state.set(key, cart);
    return { ok: true, message: `Added ${quantity} × ${book.title} to the cart.` };
  },
});

/** Cancellations above these totals need a manager, and then two (the approval policy below). */
export const MANAGER_ABOVE = 60;
export const TWO_MANAGERS_ABOVE = 120;

export const cancelOrder = defineTool({
  name: 'cancel_order',
  description: "Cancel one of the signed-in customer's orders that has not shipped yet.",
  input: z.object({ orderId }),
  // Routed by amount: any approver up to 60.00, a manager above, two managers above 120.00.
  approval: async ({ orderId: id }, ctx) => {
    const order = await loadOrder(ctx.state, id);
    const total = order ? orderTotal(order) : 0;
    if (total > TWO_MANAGERS_ABOVE) return { role: 'manager', approvals: 2 };
    if (total > MANAGER_ABOVE) return { role: 'manager' };
    return true;
  },
  // Cancelling an already cancelled order changes nothing, so a retry after a crash is safe.
  idempotent: true,
  // Every cancellation is seen by a person: no "always approve" for this tool.
  standing: false,
  // A customer waits on it: remind the support team after an hour, tell the managers after four.
  remindAfter: '1h',
  escalateAfter: '4h',
  escalateTo: 'manager',
  authorize: ({ orderId: id }, ctx) => ownOrder(ctx.state, ctx.principal, id),
  effect: async ({ orderId: id }, ctx) => {
    const order = await loadOrder(ctx.state, id);
    if (!order) return `Cancel order ${id} (not found).`;
    const lines = order.bookIds.map((bookId) => {
      const book = books.find((b) => b.id === bookId);
      return book ? `${book.title} (${money(book.price)})` : bookId;
    });
    const refusal =
      order.status === 'Processing' ? '' : ` It is ${order.status}, so the cancellation will be refused.`;
    return `Cancel order ${id} for customer ${order.customer}: ${lines.join(', ')}; total ${money(orderTotal(order))}. Status now: ${order.status}.${refusal}`;
  },
  execute: async ({ orderId: id }, ctx) => {
    const order = (await loadOrder(ctx.state, id))!;
    if (order.status === 'Cancelled') return { ok: true, message: `Order ${id} was already cancelled.` };
    if (order.status !== 'Processing') {
      return {
        ok: false,
        message: `Order ${id} has already been ${order.status.toLowerCase()} and cannot be cancelled.`,
      };
    }
    await saveOrder(ctx.state, { ...order, status: 'Cancelled' });
    return { ok: true, message: `Order ${id} has been cancelled.` };
  },
});
