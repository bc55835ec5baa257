import { type Attributes, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { CountersignError } from './errors/countersign-error.ts';

/**
 * OpenTelemetry spans for the steps a person may want to follow: model steps, requests
 * raised and decided, executions, workflow supersteps. `@opentelemetry/api` has no
 * dependencies and is a no-op until the application registers an SDK, so this costs a
 * function call per step when nobody traces.
 *
 * Attributes name things (request id, session, tool, run, verdict), never argument values:
 * those are customer data.
 */
const tracer = () => trace.getTracer('countersign');

export const SPAN = {
  modelStep: 'countersign.model.step',
  requestRaise: 'countersign.request.raise',
  requestDecide: 'countersign.request.decide',
  execution: 'countersign.execution',
  superstep: 'countersign.workflow.superstep',
} as const;

export const ATTR = {
  requestId: 'countersign.request.id',
  requestKind: 'countersign.request.kind',
  session: 'countersign.session',
  agent: 'countersign.agent',
  tool: 'countersign.tool',
  run: 'countersign.run',
  workflow: 'countersign.workflow',
  superstep: 'countersign.superstep',
  messages: 'countersign.messages',
  calls: 'countersign.calls',
  verdict: 'countersign.verdict',
  outcome: 'countersign.outcome',
  errorCode: 'countersign.error.code',
} as const;

/** Attribute values as given; undefined and null are dropped, not recorded as text. */
export type SpanAttributes = Record<string, string | number | boolean | null | undefined>;

function clean(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes))
    if (value !== undefined && value !== null) out[key] = value;
  return out;
}

/**
 * Run `fn` inside a span that is active for everything it awaits (so spans started below
 * become its children). A thrown error is recorded on the span with its stable code and
 * rethrown unchanged.
 */
export function withSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes: clean(attributes) }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      recordError(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The span of the step running now (undefined outside one, or without an SDK's context). */
export function activeSpan(): Span | undefined {
  return trace.getActiveSpan();
}

/** Add attributes learned during the step (the verdict, the outcome). */
export function setSpanAttributes(span: Span | undefined, attributes: SpanAttributes): void {
  span?.setAttributes(clean(attributes));
}

/** A step that failed without throwing (a superstep's error result): status and code only. */
export function markFailed(span: Span, code: string): void {
  span.setAttribute(ATTR.errorCode, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

function recordError(span: Span, error: unknown): void {
  const code = error instanceof CountersignError ? error.code : 'ERROR';
  span.setAttribute(ATTR.errorCode, code);
  // The message only, never the stack's arguments or the cause's payload.
  const message = error instanceof Error ? error.message : String(error);
  span.recordException({ name: code, message });
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}
