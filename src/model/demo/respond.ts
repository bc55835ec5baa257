import { KEPT_NOTICE_LEAD } from '../../core/approval.ts';
import { describeAbility, describeCall } from './describe-call.ts';
import { helpText } from './help-text.ts';
import { namedCall, type OfferedSchemas } from './named-call.ts';
import { type DemoCall, parseRequest } from './parse-request.ts';
import type { PromptResult, PromptView } from './read-prompt.ts';
import { isRejection, readOutcome } from './tool-outcome.ts';

export interface DemoReply {
  text: string;
  calls: DemoCall[];
}

/** Marker a user message can carry to make the demo model send arguments that fail validation. */
export const BAD_ARGS_MARKER = '[[bad-args]]';
const BAD_ORDER_ID = 'not-a-number';

/** The demo model's whole decision: a fresh request is acted on, results are reported. */
export function respond(
  view: PromptView,
  offered: ReadonlySet<string>,
  schemas: OfferedSchemas = new Map(),
): DemoReply {
  if (view.last === 'user') return answerRequest(view, offered, schemas);
  if (view.last === 'tool') return reportResults(view, offered, schemas);
  return { text: helpText(offered, schemas), calls: [] };
}

function answerRequest(view: PromptView, offered: ReadonlySet<string>, schemas: OfferedSchemas): DemoReply {
  // countersign's notice of calls that waited through a new message: pass the outcome on.
  if (view.userText.startsWith(KEPT_NOTICE_LEAD)) {
    const outcomes = view.userText
      .split('\n')
      .filter((line) => line.startsWith('- '))
      .map(noticeOutcome);
    return { text: `An update on your earlier request: ${outcomes.join(' ')}`, calls: [] };
  }
  if (view.userText.includes(BAD_ARGS_MARKER)) {
    return callIfOffered([{ tool: 'cancel_order', args: { orderId: BAD_ORDER_ID } }], [], offered);
  }
  // A tool named outright ("use add_note with text hello") wins over the built-in phrases.
  const named = namedCall(view.userText, schemas);
  if (named) return { text: '', calls: [named] };
  const { calls, notes } = parseRequest(view.userText, view.calls);
  if (calls.length === 0 && notes.length === 0) return { text: helpText(offered, schemas), calls: [] };
  return callIfOffered(calls, notes, offered);
}

function callIfOffered(calls: DemoCall[], notes: string[], offered: ReadonlySet<string>): DemoReply {
  const missing = [...new Set(calls.filter((call) => !offered.has(call.tool)).map((call) => call.tool))];
  const lines = [
    ...notes,
    ...missing.map(
      (tool) => `I can't ${describeAbility(tool)} here: this app does not offer the ${tool} tool.`,
    ),
  ];
  return { text: lines.join('\n'), calls: calls.filter((call) => offered.has(call.tool)) };
}

/**
 * Reports each result of the last batch. The only follow-up call is the [[bad-args]] retry,
 * and only after a validation error: anything a person turned down is reported, never retried.
 */
function reportResults(view: PromptView, offered: ReadonlySet<string>, schemas: OfferedSchemas): DemoReply {
  const retry = badArgsRetry(view, offered);
  if (retry) return retry;
  const lines = view.results.map((result) => {
    const outcome = readOutcome(result.output, result.flaggedError);
    const names = describeCall(result.tool, result.call?.args ?? {});
    return `${outcome.ok ? names.done : names.notDone}: ${outcome.detail}`;
  });
  return { text: lines.length > 0 ? lines.join('\n') : helpText(offered, schemas), calls: [] };
}

function badArgsRetry(view: PromptView, offered: ReadonlySet<string>): DemoReply | undefined {
  const failed = view.results.find(isBadArgsFailure);
  if (!failed) return undefined;
  const orderId = /\b(\d+)\b/.exec(view.userText)?.[1];
  if (orderId === undefined || !offered.has('cancel_order')) {
    const reason = readOutcome(failed.output, failed.flaggedError).detail;
    return {
      text: `I did not cancel the order: ${reason}\nTell me the order number to try again.`,
      calls: [],
    };
  }
  return { text: '', calls: [{ tool: 'cancel_order', args: { orderId: Number(orderId) } }] };
}

function isBadArgsFailure(result: PromptResult): boolean {
  if (result.tool !== 'cancel_order' || result.call?.args.orderId !== BAD_ORDER_ID) return false;
  const outcome = readOutcome(result.output, result.flaggedError);
  return !outcome.ok && !isRejection(outcome.detail);
}

/**
 * One line of countersign's notice in the demo's words: the tool's own message when its
 * result has one ("Order 1044 has been cancelled."), else what the notice says after the call.
 */
function noticeOutcome(line: string): string {
  const result = /Result: (.*)$/.exec(line)?.[1];
  if (result !== undefined) {
    try {
      const parsed = JSON.parse(result) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      return result;
    }
    return result;
  }
  return line.replace(/^- \S+ .*?\): /, '');
}
