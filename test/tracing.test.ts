import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../examples/bookstore/app.ts';
import { refundWorkflow } from '../examples/bookstore/refund-workflow.ts';
import { createAgent } from '../src/agent/create-agent.ts';
import { ATTR, SPAN } from '../src/core/tracing.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import type { AnyLanguageModel } from '../src/model/language-model.ts';
import { createMemoryCheckpointStore } from '../src/store/memory/memory-checkpoint-store.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { bookstore } from './helpers/bookstore-agent.ts';
import { testServer } from './server/helpers.ts';
import { harness } from './workflow/helpers.ts';

/**
 * The spans countersign starts through @opentelemetry/api, seen by a real SDK registered
 * globally, as an application would: names, parents, attributes, and no argument values.
 */
const exporter = new InMemorySpanExporter();
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
});
afterAll(() => {
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const named = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** Every attribute value of every span, as text, to look for customer data in. */
function allValues(): string[] {
  return exporter.getFinishedSpans().flatMap((span) => Object.values(span.attributes).map(String));
}

describe('tracing', () => {
  it('a turn that raises a request, its decision and the execution it starts', async () => {
    const { agent } = bookstore();
    const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    expect(turn.status).toBe('awaiting_approval');
    const requestId = turn.approvals[0]!.id;

    const [step] = named(SPAN.modelStep);
    expect(step?.attributes).toMatchObject({
      [ATTR.session]: 's1',
      [ATTR.agent]: 'bookstore',
      [ATTR.calls]: 1,
    });
    const [raised] = named(SPAN.requestRaise);
    expect(raised?.attributes).toEqual({
      [ATTR.requestId]: requestId,
      [ATTR.requestKind]: 'tool-call',
      [ATTR.session]: 's1',
      [ATTR.agent]: 'bookstore',
      [ATTR.tool]: 'cancel_order',
      [ATTR.verdict]: 'pending',
    });

    exporter.reset();
    const done = await agent.decide(requestId, { approved: true, by: 'alice' });
    expect(done.status).toBe('completed');
    const [decided] = named(SPAN.requestDecide);
    expect(decided?.attributes).toEqual({
      [ATTR.requestId]: requestId,
      [ATTR.requestKind]: 'tool-call',
      [ATTR.agent]: 'bookstore',
      [ATTR.verdict]: 'approved',
      [ATTR.session]: 's1',
      [ATTR.tool]: 'cancel_order',
    });
    const [execution] = named(SPAN.execution);
    expect(execution?.attributes).toEqual({
      [ATTR.requestId]: requestId,
      [ATTR.session]: 's1',
      [ATTR.agent]: 'bookstore',
      [ATTR.tool]: 'cancel_order',
      [ATTR.outcome]: 'succeeded',
    });
    // Decided and run inline: the execution and the model step after it belong to the decision.
    expect(parentOf(execution!)).toBe(decided!.spanContext().spanId);
    expect(named(SPAN.modelStep).map(parentOf)).toEqual([decided!.spanContext().spanId]);
    expect(execution!.spanContext().traceId).toBe(decided!.spanContext().traceId);

    // The order number and the arguments' JSON are customer data: in no attribute.
    expect(allValues().filter((value) => value.includes('1044') || value.includes('orderId'))).toEqual([]);
  });

  it('a failed model step carries the stable code and an error status', async () => {
    const failing: AnyLanguageModel = {
      ...createDemoModel(),
      doGenerate: () => Promise.reject(new Error('bad request')),
    };
    const agent = createAgent({
      ...bookstoreAgent.options,
      store: createMemoryStore(),
      model: failing,
      retry: false,
    });
    await expect(agent.chat('s2', 'hello')).rejects.toMatchObject({ code: 'MODEL_ERROR' });
    const [step] = named(SPAN.modelStep);
    expect(step?.attributes[ATTR.errorCode]).toBe('MODEL_ERROR');
    expect(step?.status).toMatchObject({ code: 2, message: 'MODEL_ERROR' });
    expect(step?.events.map((event) => event.name)).toEqual(['exception']);
  });

  it('a workflow request answered through the request desk gets the decision span', async () => {
    const server = testServer({ workflows: [refundWorkflow], checkpoints: createMemoryCheckpointStore() });
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'run-b', input: 1040 },
    });
    const requestId = started.json.requests[0].id as string;
    exporter.reset();
    const answered = await server.call('POST', `/v1/requests/${requestId}/decision`, {
      as: 'mia',
      body: { response: { approved: true, note: 'photo-checked-7731' } },
    });
    expect(answered.status).toBe(200);
    const [decided] = named(SPAN.requestDecide);
    expect(decided?.attributes).toEqual({
      [ATTR.requestId]: requestId,
      [ATTR.requestKind]: 'port',
      [ATTR.run]: 'run-b',
      [ATTR.tool]: 'manager-approval',
    });
    // The run continues inside the answer: its supersteps are children of the decision.
    const steps = named(SPAN.superstep);
    expect(steps.length).toBeGreaterThan(0);
    for (const step of steps) expect(parentOf(step)).toBe(decided!.spanContext().spanId);
    expect(allValues().filter((text) => text.includes('1040') || text.includes('photo-checked'))).toEqual([]);
    await server.close();
  });

  it('a refund workflow superstep: run, workflow and number, no order data', async () => {
    const { runner } = harness([refundWorkflow]);
    const view = await runner.start('refund', 'run-a', 1040);
    expect(view.status).toBe('awaiting_input');
    const steps = named(SPAN.superstep);
    expect(steps.length).toBeGreaterThan(0);
    expect(steps[0]?.attributes).toEqual({
      [ATTR.run]: 'run-a',
      [ATTR.workflow]: 'refund',
      [ATTR.superstep]: 1,
      [ATTR.messages]: 1,
    });
    expect(allValues().filter((value) => value.includes('1040'))).toEqual([]);
  });
});
