import { tool } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundWorkflow } from '../examples/bookstore/refund-workflow.ts';
import { createAgent } from '../src/agent/create-agent.ts';
import { createMemoryCheckpointStore } from '../src/store/memory/memory-checkpoint-store.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { withApproval } from '../src/tools/ai-sdk-tool.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { requestPort } from '../src/workflow/request-port.ts';
import { createWorkflowRunner } from '../src/workflow/runner.ts';
import { recordingModel } from './helpers/recording-model.ts';
import { scriptModel } from './helpers/script-model.ts';

/*
 * A ttl whose expiry would fall past 9999-12-31 can never raise a request (instant.ts: stored
 * times are compared as text). Wherever a ttl is defined, it is refused there, INVALID_INPUT
 * naming the option, instead of failing the first call that needs approval.
 */

const TOO_LONG = ['9000y', 8100 * 365 * 86_400_000, 1e300] as const;

const refusal = (option: string) =>
  expect.objectContaining({
    code: 'INVALID_INPUT',
    message: expect.stringMatching(
      new RegExp(
        `^${option.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.*\\) is too long: .*falls outside the years 0000 to 9999`,
      ),
    ),
    hint: expect.stringContaining('shorter duration'),
  });

const cancelOrder = tool({
  description: 'Cancel an order.',
  inputSchema: z.object({ orderId: z.number().int() }),
  execute: async ({ orderId }) => ({ cancelled: orderId }),
});

const savedTtl = process.env.COUNTERSIGN_APPROVAL_TTL;
afterEach(() => {
  if (savedTtl === undefined) delete process.env.COUNTERSIGN_APPROVAL_TTL;
  else process.env.COUNTERSIGN_APPROVAL_TTL = savedTtl;
});

describe('a ttl no request could expire by is refused where it is defined', () => {
  it('defineTool, and withApproval on an AI SDK tool: ttl', () => {
    for (const ttl of TOO_LONG) {
      expect(() =>
        defineTool({
          name: 'refund',
          description: 'Refund an order.',
          input: z.object({ orderId: z.number() }),
          ttl,
          execute: async () => 'ok',
        }),
      ).toThrow(refusal('ttl of tool refund'));
      // An AI SDK tool's options are built into a tool when the agent is created.
      const annotated = withApproval(cancelOrder, { ttl });
      expect(() =>
        createAgent({ name: 'desk', instructions: 'Help.', tools: { cancel_order: annotated } }),
      ).toThrow(refusal('ttl of tool cancel_order'));
    }
    // Long but reachable: a request raised now still expires before the year 9999 ends.
    const long = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ orderId: z.number() }),
      ttl: '7000y',
      execute: async () => 'ok',
    });
    expect(long.ttlMs).toBe(7000 * 365 * 86_400_000);
  });

  it('requestPort: ttl', () => {
    for (const ttl of TOO_LONG) {
      expect(() => requestPort('refund-ok', { request: z.string(), response: z.string(), ttl })).toThrow(
        refusal('ttl of port refund-ok'),
      );
    }
    expect(requestPort('p', { request: z.string(), response: z.string(), ttl: '7000y' }).ttlMs).toBe(
      7000 * 365 * 86_400_000,
    );
  });

  it('createAgent: approvalTtl, judged on the agent’s clock', () => {
    const base = { name: 'desk', instructions: 'Help.', tools: { cancel_order: cancelOrder } };
    for (const approvalTtl of TOO_LONG) {
      expect(() => createAgent({ ...base, approvalTtl })).toThrow(refusal('approvalTtl of agent desk'));
    }
    // 24h fits from today, not from the last day a store can name.
    const lastDay = () => new Date('9999-12-31T12:00:00.000Z');
    expect(() => createAgent({ ...base, approvalTtl: '24h', now: lastDay })).toThrow(
      refusal('approvalTtl of agent desk'),
    );
    expect(() => createAgent({ ...base, approvalTtl: '7000y' })).not.toThrow();
  });

  it('COUNTERSIGN_APPROVAL_TTL for an agent: refused before the model is asked anything', async () => {
    process.env.COUNTERSIGN_APPROVAL_TTL = '9000y';
    const model = recordingModel(scriptModel([[{ tool: 'cancel_order', args: { orderId: 7 } }]]));
    const store = createMemoryStore();
    const agent = createAgent({
      name: 'desk',
      instructions: 'Help.',
      tools: { cancel_order: cancelOrder },
      model,
      store,
    });
    await expect(agent.chat('s1', 'cancel 7')).rejects.toThrow(refusal('COUNTERSIGN_APPROVAL_TTL'));
    expect(model.calls).toHaveLength(0);
    expect(await store.listApprovals()).toEqual([]);
  });

  it('createWorkflowRunner: requestTtl, and COUNTERSIGN_APPROVAL_TTL', () => {
    const options = { workflows: [refundWorkflow], checkpoints: createMemoryCheckpointStore() };
    for (const requestTtl of TOO_LONG) {
      expect(() => createWorkflowRunner({ ...options, requestTtl })).toThrow(
        refusal('requestTtl of the workflow runner'),
      );
    }
    process.env.COUNTERSIGN_APPROVAL_TTL = '9000y';
    expect(() => createWorkflowRunner(options)).toThrow(refusal('COUNTERSIGN_APPROVAL_TTL'));
    process.env.COUNTERSIGN_APPROVAL_TTL = '24h';
    expect(() => createWorkflowRunner(options)).not.toThrow();
  });
});
