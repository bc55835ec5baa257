import { readFile, writeFile } from 'node:fs/promises';
import { exportSession, importSession } from '../agent/session-transfer.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { parseJsonText } from '../core/parse-json.ts';
import type { Command } from './command-input.ts';
import { decider } from './decider.ts';

/** `session export` and `session import`: moving a session between stores. */

export const exportCommand: Command = async ({ args, values, context, out }) => {
  const id = args[0]!;
  const keys = await context.exportKeys();
  const text = JSON.stringify(
    await exportSession(await context.store(), id, { keys }).catch((error: unknown) => {
      if (CountersignError.is(error) && error.code === 'NOT_FOUND' && !error.hint)
        throw new NotFoundError(error.message, {
          hint: 'Check the id, and that COUNTERSIGN_STORE names the store that holds the session.',
        });
      throw error;
    }),
  );
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
};

export const importCommand: Command = async ({ args, values, context, out }) => {
  const file = args[0]!;
  // Before the store is touched: a bad key or file writes nothing.
  const keys = await context.exportKeys();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new InvalidInputError(`Cannot import ${file}: ${(cause as Error).message}.`, {
      hint: 'Give the path of a file written by `countersign session export`.',
    });
  }
  // Depth-bounded: a file nested thousands of levels is INVALID_INPUT, not a stack overflow.
  const parsed = parseJsonText(text, `Cannot import ${file}: the file`, {
    hint: 'Give the path of a file written by `countersign session export`.',
  });
  const app = await context.app();
  const plan = await importSession(await context.store(), parsed, {
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
};
