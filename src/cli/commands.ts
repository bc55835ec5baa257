import type { TurnResult } from '../agent/views.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { JsonValue } from '../core/json.ts';
import { parseJsonText } from '../core/parse-json.ts';
import type { Command } from './command-input.ts';
import type { CliContext } from './context.ts';
import { requireArg } from './context.ts';
import { decider } from './decider.ts';
import { formatTurn } from './format.ts';
import type { Output } from './output.ts';
import { withContinuations } from './worker-command.ts';

/** The commands that run a session: they load the app and resolve the model. */

/** `--edit JSON`: an object of argument fields and their new values. */
function editOf(text: string): Record<string, JsonValue> {
  const hint = 'Give the fields to change as a JSON object, e.g. --edit \'{"quantity":"6"}\'.';
  const parsed = parseJsonText(text, '--edit', { hint });
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidInputError('--edit takes a JSON object of argument fields and their new values.', {
      hint,
    });
  }
  return parsed;
}

function printTurn(out: Output, result: TurnResult): number {
  if (out.json) out.data(result);
  else out.print(formatTurn(result));
  return 0;
}

export const commands: Record<'chat' | 'approve' | 'reject' | 'reconcile' | 'resume', Command> = {
  async chat({ args, values, context, out }) {
    const session = requireArg(args[0], 'countersign chat SESSION [MESSAGE…] [--user ID]');
    const agent = await context.agent(values.agent);
    const principal = await chatPrincipal(context, session, values.user);
    if (args.length < 2) {
      if (out.json)
        throw new InvalidInputError('The chat console prints for people and has no --json output.', {
          hint: `Give the message as well for JSON: countersign chat ${session} "MESSAGE" --json`,
        });
      const { interactiveChat } = await import('./interactive-chat.ts');
      const { describeModel } = await import('../model/resolve-model.ts');
      return interactiveChat({
        agent,
        session,
        principal,
        out,
        by: decider(values),
        selfApproval: agent.options.selfApproval ?? false,
        store: await context.store(),
        model: describeModel(await context.model()),
      });
    }
    const result = await agent.chat(
      session,
      args.slice(1).join(' '),
      // Who posted it raises what the agent asks for, and may not decide it.
      { ...(principal === undefined ? {} : { principal }), by: decider(values) },
    );
    return printTurn(out, result);
  },

  async approve({ args, values, context, out }) {
    const id = requireArg(args[0], 'countersign approve REQUEST [--as NAME]');
    const reason = values.reason;
    if (values.always && values['always-with-args']) {
      throw new InvalidInputError('Choose one of --always and --always-with-args.', {
        hint: '--always covers any arguments, --always-with-args only these same ones.',
      });
    }
    const remember = values.always ? 'tool' : values['always-with-args'] ? 'tool-with-args' : undefined;
    const edit = values.edit === undefined ? undefined : editOf(values.edit);
    if ((await context.request(id)).kind === 'port') {
      // --always goes along, so the desk refuses it for a port rather than it being dropped.
      const { answer } = await import('./workflow-commands.ts');
      return answer(
        context,
        id,
        {
          approved: true,
          ...(reason ? { reason } : {}),
          ...(remember ? { remember } : {}),
          ...(edit ? { edit } : {}),
        },
        values,
        out,
      );
    }
    const agent = await context.agentForRequest(id);
    const decide = (bound: typeof agent) =>
      bound.decide(id, {
        approved: true,
        by: decider(values),
        ...(reason ? { reason } : {}),
        ...(remember ? { remember } : {}),
        ...(edit ? { edit } : {}),
      });
    const result = values.queue ? await withContinuations(process.env, agent, decide) : await decide(agent);
    return printTurn(out, result);
  },

  async reject({ args, values, context, out }) {
    const id = requireArg(args[0], 'countersign reject REQUEST --reason TEXT');
    if (!values.reason?.trim()) {
      throw new InvalidInputError('A rejection needs a reason: the model reads it and tells the customer.', {
        hint: 'Add --reason "…", e.g. --reason "Support must call the customer first. Do not retry."',
      });
    }
    if ((await context.request(id)).kind === 'port') {
      const { answer } = await import('./workflow-commands.ts');
      return answer(context, id, { approved: false, reason: values.reason }, values, out);
    }
    const agent = await context.agentForRequest(id);
    const reject = (bound: typeof agent) => bound.reject(id, { by: decider(values), reason: values.reason });
    return printTurn(
      out,
      values.queue ? await withContinuations(process.env, agent, reject) : await reject(agent),
    );
  },

  async reconcile({ args, values, context, out }) {
    const id = requireArg(args[0], 'countersign reconcile REQUEST --succeeded|--failed [--result TEXT]');
    if (Boolean(values.succeeded) === Boolean(values.failed)) {
      throw new InvalidInputError('Say what happened: exactly one of --succeeded or --failed.', {
        hint: 'Check the outside world first: --succeeded if the call took effect, --failed if it did not.',
      });
    }
    const execution = await (await context.store()).getExecution(id);
    const agent = execution
      ? await context.agentForSession(execution.session)
      : await context.agentForRequest(id);
    const result = await agent.reconcile(id, {
      outcome: values.succeeded ? 'succeeded' : 'failed',
      by: decider(values),
      ...(values.result !== undefined ? { result: values.result } : {}),
    });
    return printTurn(out, result);
  },

  async resume({ args, context, out }) {
    const session = requireArg(args[0], 'countersign resume SESSION');
    const agent = await context.agentForSession(session);
    return printTurn(out, await agent.resume(session));
  },
};

/**
 * Who a chat speaks for, the same in the console and with a MESSAGE: --user; else the stored
 * customer of an existing session; else, for a new session, the app's demo customer (said on
 * stderr, so nobody creates a session for someone without knowing).
 */
async function chatPrincipal(
  context: CliContext,
  session: string,
  user: string | undefined,
): Promise<string | null | undefined> {
  if (user !== undefined) return user;
  const existing = await (await context.store()).getSession(session);
  if (existing) return existing.principal;
  const demo = (await context.app()).demoPrincipal;
  process.stderr.write(
    demo
      ? `New session ${session} belongs to ${demo}, the app's demo customer. Pass --user ID for another customer.\n`
      : `New session ${session} has no signed-in customer: the app names no demo customer. Pass --user ID to start it for one.\n`,
  );
  return demo;
}
