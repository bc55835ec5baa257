import { readFile, writeFile } from 'node:fs/promises';
import {
  auditTrail,
  listExecutions,
  listPending,
  listRules,
  revokeRule,
  showRequest,
  sweepExpired,
  verifyAudit,
} from '../agent/queries.ts';
import { exportSession, importSession } from '../agent/session-transfer.ts';
import type { TurnResult } from '../agent/views.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { ExecutionStatus } from '../core/execution.ts';
import { describeModel } from '../model/resolve-model.ts';
import type { CliContext } from './context.ts';
import { requireArg } from './context.ts';
import { formatApproval, formatAudit, formatExecution, formatTurn } from './format.ts';
import { interactiveChat } from './interactive-chat.ts';
import type { CliValues } from './main.ts';
import type { Output } from './output.ts';
import { withContinuations, workerCommand } from './worker-command.ts';
import { expireWorkflowRequests, workflowCommands, workflowUsage } from './workflow-commands.ts';

export interface CommandInput {
  args: string[];
  values: CliValues;
  context: CliContext;
  out: Output;
}

type Command = (input: CommandInput) => Promise<number | undefined>;

export const usage = `countersign — tool calls that wait for a person and run exactly as approved

Usage: countersign <command> [options]        (every command takes --json)

  serve [--port 8787] [--host 127.0.0.1] [--chat]
                                          HTTP API, approval inbox (and with --chat a customer chat page)
  chat SESSION [MESSAGE] [--user ID]      send a message (no MESSAGE: interactive console)
  pending [--session S] [--tool T]        requests waiting for a decision, oldest first
  show REQUEST                            one request, with its decision if any
  approve REQUEST [--as NAME] [--reason TEXT] [--always | --always-with-args] [--queue]
  reject REQUEST --reason TEXT [--as NAME] [--queue]
                                          --queue: hand the continuation to a worker (PostgreSQL)
  worker [--concurrency N]                continue decided sessions from the queue until SIGINT/SIGTERM
  executions [--session S] [--status unknown]
  reconcile REQUEST --succeeded|--failed [--result TEXT] [--as NAME]
  resume SESSION                          continue after a failed or interrupted run
  rules SESSION                           standing approvals of a session
  rules revoke RULE
  expire                                  answer every overdue request (tool calls and workflow requests) as expired
  audit [--session S] [--verify]          the hash-chained decision trail
  session export SESSION [--out FILE]
  session import FILE [--trust-unsigned]
${workflowUsage}

Environment: COUNTERSIGN_STORE (sqlite:PATH | memory: | postgres://USER@HOST:PORT/DB[?schema=NAME] |
file:DIR for workflow runs only; default ./.countersign/countersign.db),
COUNTERSIGN_MODEL (demo | openai-compatible:MODEL | openai:MODEL | anthropic:MODEL),
COUNTERSIGN_APP (bookstore | kitchen | path to a module exporting agents),
COUNTERSIGN_APPROVAL_TTL (e.g. 2s, 15m, 24h; default 24h),
COUNTERSIGN_APPROVER (the name decisions are recorded under; default $USER; --as overrides).

Options: --json (machine-readable output), --agent NAME (an app with several agents),
--as NAME (who decides; self-asserted on the CLI — the server authenticates approvers).`;

function printTurn(out: Output, result: TurnResult): number {
  if (out.json) out.data(result);
  else out.print(formatTurn(result));
  return 0;
}

function decider(values: CliValues): string {
  return values.as ?? process.env.COUNTERSIGN_APPROVER ?? process.env.USER ?? 'cli';
}

export const commands: Record<string, Command> = {
  ...workflowCommands,
  async serve({ values, context, out }) {
    // Imported here, so no other command pays for loading the HTTP server.
    const { serveCommand } = await import('../server/serve-command.ts');
    const store = await context.store({ check: 'quick' });
    const model = await context.model();
    const app = await context.app();
    return serveCommand({
      app,
      store,
      ...(app.workflows?.length ? { checkpoints: await context.checkpoints() } : {}),
      model,
      modelName: describeModel(model),
      env: process.env,
      host: values.host,
      port: values.port,
      chat: values.chat ?? false,
      print: (text) => out.print(text),
    });
  },

  async chat({ args, values, context, out }) {
    const session = requireArg(args[0], 'countersign chat SESSION [MESSAGE] [--user ID]');
    const agent = await context.agent(values.agent);
    if (args.length < 2) {
      // The console demo signs in as the app's demo customer unless told otherwise.
      const principal = values.user ?? (await context.app()).demoPrincipal;
      return interactiveChat({
        agent,
        session,
        principal,
        out,
        by: decider(values),
        store: await context.store(),
        model: describeModel(await context.model()),
      });
    }
    const principal = values.user;
    const result = await agent.chat(
      session,
      args.slice(1).join(' '),
      principal === undefined ? {} : { principal },
    );
    return printTurn(out, result);
  },

  async pending({ values, context, out }) {
    const filter = {
      ...(values.session ? { session: values.session } : {}),
      ...(values.tool ? { tool: values.tool } : {}),
    };
    const list = await listPending(await context.store(), filter);
    if (out.json) out.data(list);
    else out.print(list.length ? list.map(formatApproval).join('\n\n') : 'No requests are waiting.');
    return 0;
  },

  async show({ args, context, out }) {
    const view = await showRequest(await context.store(), requireArg(args[0], 'countersign show REQUEST'));
    if (out.json) out.data(view);
    else out.print(`${formatApproval(view)}\n  status:  ${view.status}`);
    return 0;
  },

  async approve({ args, values, context, out }) {
    const id = requireArg(args[0], 'countersign approve REQUEST [--as NAME]');
    const agent = await context.agentForRequest(id);
    const reason = values.reason;
    if (values.always && values['always-with-args']) {
      throw new InvalidInputError('Choose one of --always and --always-with-args.');
    }
    const remember = values.always ? 'tool' : values['always-with-args'] ? 'tool-with-args' : undefined;
    const decide = (bound: typeof agent) =>
      bound.decide(id, {
        approved: true,
        by: decider(values),
        ...(reason ? { reason } : {}),
        ...(remember ? { remember } : {}),
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
    const agent = await context.agentForRequest(id);
    const reject = (bound: typeof agent) => bound.reject(id, { by: decider(values), reason: values.reason });
    return printTurn(
      out,
      values.queue ? await withContinuations(process.env, agent, reject) : await reject(agent),
    );
  },

  worker: workerCommand,

  async executions({ values, context, out }) {
    const status = values.status as ExecutionStatus | undefined;
    if (status && !['started', 'succeeded', 'failed', 'unknown'].includes(status)) {
      throw new InvalidInputError(`--status must be started, succeeded, failed or unknown, not ${status}.`);
    }
    const list = await listExecutions(await context.store(), {
      ...(values.session ? { session: values.session } : {}),
      ...(status ? { status } : {}),
    });
    if (out.json) out.data(list);
    else out.print(list.length ? list.map(formatExecution).join('\n') : 'No executions yet.');
    return 0;
  },

  async reconcile({ args, values, context, out }) {
    const id = requireArg(args[0], 'countersign reconcile REQUEST --succeeded|--failed [--result TEXT]');
    if (Boolean(values.succeeded) === Boolean(values.failed)) {
      throw new InvalidInputError('Say what happened: exactly one of --succeeded or --failed.');
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

  async rules({ args, values, context, out }) {
    const store = await context.store();
    if (args[0] === 'revoke') {
      const rule = await revokeRule(
        store,
        requireArg(args[1], 'countersign rules revoke RULE'),
        decider(values),
      );
      if (out.json) out.data(rule);
      else
        out.print(
          `Revoked ${rule.id} (${rule.tool}) at ${rule.revokedAt}; the next call asks a person again.`,
        );
      return 0;
    }
    const session = requireArg(args[0], 'countersign rules SESSION | rules revoke RULE');
    const rules = await listRules(store, session);
    if (out.json) out.data(rules);
    else
      out.print(
        rules.length
          ? rules
              .map(
                (r) =>
                  `${r.id}  ${r.tool} ${r.argsHash ? `(these arguments, ${r.argsHash.slice(0, 12)}…)` : '(any arguments)'}  by ${r.createdBy} at ${r.createdAt}`,
              )
              .join('\n')
          : `No standing approvals on session ${session}.`,
      );
    return 0;
  },

  async expire({ context, out }) {
    const checkpoints = await context.checkpoints();
    // A file: store keeps workflow runs only: there are no agent requests to expire there.
    const expired = checkpoints.kind === 'file' ? [] : await sweepExpired(await context.store());
    const workflowRequests = await expireWorkflowRequests(checkpoints);
    if (out.json) out.data({ expired, workflowRequests });
    else {
      const lines: string[] = [];
      if (expired.length) lines.push(`Expired ${expired.length}: ${expired.join(', ')}`);
      if (workflowRequests.length)
        lines.push(
          `Expired ${workflowRequests.length} workflow request${workflowRequests.length === 1 ? '' : 's'}: ${workflowRequests
            .map((request) => `${request.requestId} (run ${request.run}, ${request.port})`)
            .join(', ')}`,
        );
      out.print(lines.length ? lines.join('\n') : 'Nothing was overdue.');
    }
    return 0;
  },

  async audit({ values, context, out }) {
    const store = await context.store(values.verify ? { check: 'quick' } : {});
    if (values.verify) {
      const verdict = await verifyAudit(store);
      if (out.json) out.data(verdict);
      else
        out.print(
          verdict.ok
            ? `Audit chain intact: ${verdict.entries} entries.${verdict.head ? ` Head: #${verdict.head.seq} ${verdict.head.hash} (record it elsewhere to detect truncation).` : ''}`
            : verdict.brokenAt === null
              ? `AUDIT TRAIL INCOMPLETE (${verdict.entries} entries): ${verdict.problem}`
              : `AUDIT CHAIN BROKEN at entry ${verdict.brokenAt}: ${verdict.problem}`,
        );
      return verdict.ok ? 0 : 3;
    }
    const entries = await auditTrail(store, values.session ? { session: values.session } : {});
    if (out.json) out.data(entries);
    else out.print(entries.length ? entries.map(formatAudit).join('\n') : 'The audit trail is empty.');
    return 0;
  },

  async session({ args, values, context, out }) {
    const [action, target] = args;
    const store = await context.store();
    if (action === 'export') {
      const id = requireArg(target, 'countersign session export SESSION [--out FILE]');
      const keys = context.exportKeys();
      const text = JSON.stringify(await exportSession(store, id, { keys }));
      if (values.out) {
        await writeFile(values.out, `${text}\n`);
        const signedBy = keys?.signing.id ?? null;
        if (out.json) out.data({ session: id, file: values.out, bytes: Buffer.byteLength(text), signedBy });
        else
          out.print(
            `Exported session ${id} to ${values.out} (${Buffer.byteLength(text)} bytes, ${signedBy ? `signed with key ${signedBy}` : 'unsigned'}).`,
          );
      } else {
        process.stdout.write(`${text}\n`);
      }
      return 0;
    }
    if (action === 'import') {
      const file = requireArg(target, 'countersign session import FILE [--trust-unsigned]');
      // Before the store is touched: a bad key or file writes nothing.
      const keys = context.exportKeys();
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(file, 'utf8'));
      } catch (cause) {
        throw new InvalidInputError(`Cannot import ${file}: ${(cause as Error).message}.`, {
          hint: 'Give the path of a file written by `countersign session export`.',
        });
      }
      const app = await context.app();
      const plan = await importSession(store, parsed, {
        by: decider(values),
        keys,
        trustUnsigned: values['trust-unsigned'] === true,
        agents: app.agents.map((agent) => agent.name),
      });
      const summary = {
        session: plan.snapshot.session.id,
        messages: plan.snapshot.messages.length,
        signedBy: plan.signedBy,
        pending: plan.snapshot.approvals
          .filter((approval) => approval.status === 'pending')
          .map((approval) => approval.id),
        reopened: plan.reopened,
        refusedLedger: plan.refusedLedger,
      };
      if (out.json) out.data(summary);
      else {
        const lines = [
          `Imported session ${summary.session} (${summary.signedBy ? `signature of key ${summary.signedBy} verified` : 'unsigned, trusted on request'}): ${summary.messages} messages, ${summary.pending.length} waiting request(s).`,
        ];
        if (summary.reopened.length)
          lines.push(`Waiting for a person again (decided in the file): ${summary.reopened.join(', ')}`);
        if (summary.refusedLedger.length)
          lines.push(`Ledger rows left out (unverifiable): ${summary.refusedLedger.join(', ')}`);
        out.print(lines.join('\n'));
      }
      return 0;
    }
    throw new InvalidInputError('Usage: countersign session export SESSION | session import FILE');
  },
};
