import { createInterface } from 'node:readline';
import type { Agent } from '../agent/create-agent.ts';
import { listPending } from '../agent/queries.ts';
import type { TurnResult } from '../agent/views.ts';
import { DEFAULT_REJECTION_REASON } from '../core/approval.ts';
import { readableJson } from '../core/canonical-json.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import type { JsonValue } from '../core/json.ts';
import type { Store } from '../store/store.ts';
import { fieldValue, readConsoleAnswer } from './console-answer.ts';
import { formatApproval, formatTurn } from './format.ts';
import type { Output } from './output.ts';

interface ChatOptions {
  agent: Agent;
  session: string;
  principal: string | null | undefined;
  store: Store;
  by: string;
  /** Whether the agent lets whoever raised a request decide it (the kitchen does; a support desk does not). */
  selfApproval: boolean;
  out: Output;
  /** A description of the model, shown so nobody mistakes the demo model for a real one. */
  model?: string;
}

/**
 * The console chat. The question lives here, in the caller, never inside a tool: the same
 * requests can be answered from another process (`countersign approve`) while this one waits.
 */
export async function interactiveChat(options: ChatOptions): Promise<number> {
  const { agent, session, principal, store, out } = options;
  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  const ask = async (prompt: string): Promise<string | null> => {
    process.stdout.write(prompt);
    const next = await lines.next();
    return next.done ? null : String(next.value).trim();
  };

  out.print(
    `countersign — chatting as ${principal ?? 'no signed-in user'} on session "${session}" with agent ${agent.name}.`,
  );
  if (options.model) out.print(`Model: ${options.model}.`);
  out.print('Type a message; an empty line or "exit" quits. Waiting requests survive quitting.');
  const asPoster = principal === undefined ? {} : { principal };
  let waiting = await listPending(store, { session });
  /** The requests last printed, so asking again does not repeat them. */
  let shown = '';
  try {
    for (;;) {
      let result: TurnResult | null = null;
      if (waiting.length > 0) {
        if (shown !== waiting.map((a) => a.id).join()) {
          for (const approval of waiting) out.print(formatApproval(approval));
          if (!options.selfApproval) out.print(othersDecide(options.by, waiting[0]!.id));
          shown = waiting.map((a) => a.id).join();
        }
        const first = waiting[0]!;
        const keeps = (agent.options.onNewMessage ?? 'reject') === 'keep';
        const answer = readConsoleAnswer(
          await ask(
            options.selfApproval
              ? `Approve? y = approve, n = reject${first.editable.length > 0 ? `, e = edit ${first.editable.join(', ')}` : ''}, or type a new message: `
              : keeps
                ? 'you (the request keeps waiting for the approver): '
                : 'you (a new message answers the waiting request as "moved on"): ',
          ),
          { editable: options.selfApproval && first.editable.length > 0 },
        );
        if (answer.kind === 'quit') break;
        if (answer.kind === 'unclear') {
          // Never taken as a message: a slipped key must not drop the request.
          out.print(
            options.selfApproval
              ? `"${answer.text}" is not an answer: type y to approve, n to reject${first.editable.length > 0 ? ', e to edit' : ''}, or a message of more than one word.`
              : `"${answer.text}" was not sent: type a message of more than one word, or press Enter to quit.`,
          );
          continue;
        }
        if (!options.selfApproval && answer.kind !== 'message') {
          // Never taken as a message: someone who meant to approve must not cancel instead.
          out.print(othersDecide(options.by, first.id));
          continue;
        }
        if (answer.kind === 'approve') {
          result = await decideAll(
            waiting.map((a) => a.id),
            (id) => agent.approve(id, { by: options.by }),
          );
        } else if (answer.kind === 'edit') {
          const edit: Record<string, JsonValue> = {};
          const args = (first.args ?? {}) as Record<string, JsonValue>;
          for (const field of first.editable) {
            const typed = await ask(`${field} [${readableJson(args[field] ?? null)}] (Enter keeps it): `);
            if (typed === null) break;
            if (typed !== '') edit[field] = fieldValue(typed, args[field]) as JsonValue;
          }
          result = await guarded(() =>
            agent.decide(first.id, {
              approved: true,
              by: options.by,
              ...(Object.keys(edit).length > 0 ? { edit } : {}),
            }),
          );
        } else if (answer.kind === 'reject') {
          const reason = await ask('Reason for the agent (Enter for the default): ');
          result = await decideAll(
            waiting.map((a) => a.id),
            (id) => agent.reject(id, { by: options.by, reason: reason || DEFAULT_REJECTION_REASON }),
          );
        } else {
          // A new message: what it does to the waiting calls is the agent's onNewMessage
          // ("moved on", or they keep waiting and the model says so).
          result = await guarded(() => agent.chat(session, answer.text, { ...asPoster, by: options.by }));
        }
      } else {
        const text = await ask('you: ');
        if (text === null || text === '' || text.toLowerCase() === 'exit') break;
        result = await guarded(() => agent.chat(session, text, { ...asPoster, by: options.by }));
      }
      // Waiting requests are printed at the top of the loop; print only what else happened.
      if (result && (result.reply || result.unknown.length > 0))
        out.print(formatTurn({ ...result, approvals: [] }));
      waiting = result ? result.approvals : await listPending(store, { session });
    }
  } finally {
    rl.close();
  }
  const left = await listPending(store, { session });
  if (left.length > 0) {
    out.print(
      `${left.length} request(s) still waiting. Decide later with: npx countersign approve ${left[0]!.id}${options.selfApproval ? '' : ' --as NAME (someone other than you)'}`,
    );
  }
  return 0;
}

/** Separation of duties in the console: what you raised, someone else decides. */
function othersDecide(by: string, id: string): string {
  return `You (${by}) raised this request, so someone else must decide it: npx countersign approve ${id} --as NAME (or in the inbox). It keeps waiting when you quit.`;
}

/** Decides each request; the last successful turn is the one the person sees. */
async function decideAll(
  ids: string[],
  decide: (id: string) => Promise<TurnResult>,
): Promise<TurnResult | null> {
  let last: TurnResult | null = null;
  for (const id of ids) last = (await guarded(() => decide(id))) ?? last;
  return last;
}

/** An error (say, decided elsewhere first) is shown and the chat goes on. */
async function guarded(run: () => Promise<TurnResult>): Promise<TurnResult | null> {
  try {
    return await run();
  } catch (error) {
    if (!CountersignError.is(error)) throw error;
    process.stdout.write(`! ${error.code}: ${error.message}\n`);
    return null;
  }
}
