import { createInterface } from 'node:readline';
import type { Agent } from '../agent/create-agent.ts';
import { listPending } from '../agent/queries.ts';
import type { TurnResult } from '../agent/views.ts';
import { DEFAULT_REJECTION_REASON } from '../core/approval.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import type { Store } from '../store/store.ts';
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
        const answer = await ask(
          options.selfApproval
            ? 'Approve? y = approve, n = reject, or type a new message: '
            : 'you (a new message answers the waiting request as "moved on"): ',
        );
        if (answer === null || answer === '' || answer.toLowerCase() === 'exit') break;
        const lower = answer.toLowerCase();
        if (!options.selfApproval && ['y', 'yes', 'n', 'no'].includes(lower)) {
          // Never taken as a message: someone who meant to approve must not cancel instead.
          out.print(othersDecide(options.by, waiting[0]!.id));
          continue;
        }
        if (lower === 'y' || lower === 'yes') {
          result = await decideAll(
            waiting.map((a) => a.id),
            (id) => agent.approve(id, { by: options.by }),
          );
        } else if (lower === 'n' || lower === 'no') {
          const reason = await ask('Reason for the agent (Enter for the default): ');
          result = await decideAll(
            waiting.map((a) => a.id),
            (id) => agent.reject(id, { by: options.by, reason: reason || DEFAULT_REJECTION_REASON }),
          );
        } else {
          // Anything else is the person moving on: the waiting calls are rejected as such.
          result = await guarded(() => agent.chat(session, answer, { ...asPoster, by: options.by }));
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
