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
  const text = JSON.stringify(
    await exportSession(await context.store(), id).catch((error: unknown) => {
      if (CountersignError.is(error) && error.code === 'NOT_FOUND' && !error.hint)
        throw new NotFoundError(error.message, {
          hint: 'Check the id, and that COUNTERSIGN_STORE names the store that holds the session.',
        });
      throw error;
    }),
  );
  if (values.out) {
    await writeFile(values.out, `${text}\n`);
    if (out.json) out.data({ session: id, file: values.out, bytes: Buffer.byteLength(text) });
    else out.print(`Exported session ${id} to ${values.out} (${Buffer.byteLength(text)} bytes).`);
  } else {
    process.stdout.write(`${text}\n`);
  }
  return 0;
};

export const importCommand: Command = async ({ args, values, context, out }) => {
  const file = args[0]!;
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
  const snapshot = await importSession(await context.store(), parsed, decider(values));
  const summary = {
    session: snapshot.session.id,
    messages: snapshot.messages.length,
    pending: snapshot.approvals
      .filter((approval) => approval.status === 'pending')
      .map((approval) => approval.id),
  };
  if (out.json) out.data(summary);
  else
    out.print(
      `Imported session ${summary.session}: ${summary.messages} messages, ${summary.pending.length} waiting request(s).`,
    );
  return 0;
};
