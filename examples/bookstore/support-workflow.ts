import { z } from 'zod';
import { type Agent, agentExecutor, defineWorkflow } from '../../src/authoring.ts';

/**
 * A support request handled by the bookstore agent inside a workflow: when the agent wants
 * to cancel an order, the run waits on its `approval` port, and the answer goes through the
 * agent's own decision path (bound to the stored call, decided once, executed once, audited).
 */
export function createSupportWorkflow(agent: Agent) {
  const assistant = agentExecutor({
    id: 'assistant',
    agent,
    input: z.object({ customer: z.string().min(1), message: z.string().min(1) }),
    prompt: ({ customer, message }) => ({ text: message, principal: customer }),
  });
  return defineWorkflow({ name: 'support', version: 1, stateNamespace: 'bookstore' })
    .start(assistant)
    .output(assistant)
    .build();
}
