import { readFile, writeFile } from 'node:fs/promises';
import { exportSession, importSession } from '../agent/session-transfer.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { parseJsonText } from '../core/parse-json.ts';
import { keyringOf } from '../crypto/encrypted-store.ts';
import { ENCRYPTION_KEYS_VAR } from '../crypto/env-key-provider.ts';
import { isSealedExport, openExport, sealExport } from '../crypto/sealed-export.ts';
import type { Command } from './command-input.ts';
import { decider } from './decider.ts';

/** `session export` and `session import`: moving a session between stores. */

export const exportCommand: Command = async ({ args, values, context, out }) => {
  const id = args[0]!;
  const keys = await context.exportKeys();
  const store = await context.store();
  const keyring = keyringOf(store);
  if (values.decrypt && keyring === null) {
    throw new ConfigError(
      `--decrypt needs ${ENCRYPTION_KEYS_VAR}: this store is opened without encryption keys.`,
      {
        hint: 'Without keys the export is plain JSON already; leave out --decrypt.',
      },
    );
  }
  const plain = JSON.stringify(
    await exportSession(store, id, { keys }).catch((error: unknown) => {
      if (CountersignError.is(error) && error.code === 'NOT_FOUND' && !error.hint)
        throw new NotFoundError(error.message, {
          hint: 'Check the id, and that COUNTERSIGN_STORE names the store that holds the session.',
        });
      throw error;
    }),
  );
  // An encrypted store's data stays encrypted when it leaves, unless asked otherwise.
  const sealed = keyring !== null && !values.decrypt ? await sealExport(plain, keyring.provider) : null;
  const text = sealed === null ? plain : JSON.stringify(sealed);
  if (values.out) {
    await writeFile(values.out, `${text}\n`);
    const signedBy = keys?.signing.id ?? null;
    const encryptedWith = sealed?.kekId ?? null;
    if (out.json)
      out.data({ session: id, file: values.out, bytes: Buffer.byteLength(text), signedBy, encryptedWith });
    else
      out.print(
        `Exported session ${id} to ${values.out} (${Buffer.byteLength(text)} bytes, ${signedBy ? `signed with key ${signedBy}` : 'unsigned'}${encryptedWith ? `, encrypted with key ${encryptedWith}` : ''}).`,
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
  const hint = { hint: 'Give the path of a file written by `countersign session export`.' };
  let parsed = parseJsonText(text, `Cannot import ${file}: the file`, hint);
  const store = await context.store();
  if (isSealedExport(parsed)) {
    const inner = await openExport(parsed, keyringOf(store)?.provider ?? null, file);
    parsed = parseJsonText(inner, `Cannot import ${file}: the decrypted file`, hint);
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
};
