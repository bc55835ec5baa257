import type { ToolState } from '../../src/authoring.ts';
import { initialOrders, type Order } from './data.ts';

/** Orders live in the store's state, so a cancellation made by one process is seen by the next. */
export async function loadOrder(state: ToolState, id: number): Promise<Order | undefined> {
  const stored = await state.get(`order:${id}`);
  if (stored !== undefined) return stored as unknown as Order;
  return initialOrders.find((order) => order.id === id);
}

export async function saveOrder(state: ToolState, order: Order): Promise<void> {
  await state.set(`order:${order.id}`, { ...order, bookIds: [...order.bookIds] });
}

/** Authorization comes from the session's principal, never from the model's arguments. */
export async function ownOrder(
  state: ToolState,
  principal: string | null,
  id: number,
): Promise<true | string> {
  if (!principal) return 'no customer is signed in on this session, so no order can be looked up';
  const order = await loadOrder(state, id);
  if (!order || order.customer !== principal) return `order ${id} is not one of this customer's orders`;
  return true;
}
