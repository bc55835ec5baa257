import { createAgent } from '../../src/authoring.ts';
import { refundWorkflow } from './refund-workflow.ts';
import { createSupportWorkflow } from './support-workflow.ts';
import { addToCart, cancelOrder, getOrderStatus, searchBooks } from './tools.ts';

export const bookstoreAgent = createAgent({
  name: 'bookstore',
  instructions:
    'You are the support agent of a small online bookstore. Help the signed-in customer with their orders ' +
    'and with finding books. Cancelling an order needs a person from the support team to approve it; when a ' +
    'call is rejected, tell the customer why and do not propose the same call again.',
  tools: [searchBooks, getOrderStatus, addToCart, cancelOrder],
  // A support desk: the customer is not the approver, so "any update?" must not cancel the
  // request the team is looking at. It keeps waiting; the model says so, and later the outcome.
  onNewMessage: 'keep',
});

export const agents = [bookstoreAgent];
/** The customer `npm start` signs in as. */
export const demoPrincipal = 'c-100';

/** What of the bookstore's state is one customer's: their cart (erased with them). */
export const customerState = (principal: string) => [{ namespace: 'bookstore', key: `cart:${principal}` }];

export { refundWorkflow };
export const supportWorkflow = createSupportWorkflow(bookstoreAgent);
/** Workflows `countersign run start` knows by name. */
export const workflows = [refundWorkflow, supportWorkflow];
