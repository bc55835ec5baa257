import { ConfigError } from '../core/errors/config-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { ErasureReport } from '../erasure/erase-principal.ts';
import type { PurgeReport } from '../erasure/purge.ts';
import type { Store } from '../store/store.ts';
import type { Command } from './command-input.ts';
import type { CliContext } from './context.ts';
import { decider } from './decider.ts';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The agents' store, or null when COUNTERSIGN_STORE=file: keeps workflow runs only. */
async function storeOf(
  context: CliContext,
): Promise<{ store: Store | null; checkpoints: Awaited<ReturnType<CliContext['checkpoints']>> }> {
  const checkpoints = await context.checkpoints();
  return { store: checkpoints.kind === 'file' ? null : await context.store(), checkpoints };
}

export function describeErasure(report: ErasureReport, audited = true): string {
  const { counts } = report;
  if (!report.erased)
    return `Nothing to erase for customer ${report.principal}: no session, request or run names them.`;
  const parts = [
    `${plural(counts.sessions, 'session')} (${plural(counts.messages, 'message')})`,
    plural(counts.requests, 'request'),
    plural(counts.executions, 'ledger row'),
    `${plural(counts.runs, 'run')} (${plural(counts.checkpoints, 'checkpoint')})`,
    plural(counts.deliveries, 'outbox row'),
    ...(report.stateKeys ? [plural(report.stateKeys, 'app state key')] : []),
    `the data of ${plural(counts.auditEntries, 'audit entry', 'audit entries')}`,
  ];
  const lines = [`Erased customer ${report.principal}: ${parts.join(', ')}.`];
  if (report.expired.length) lines.push(`Expired first: ${report.expired.join(', ')}.`);
  if (report.decidedFirst.length)
    lines.push(
      `Decided by a person before the erasure reached them (removed all the same): ${report.decidedFirst.join(', ')}.`,
    );
  if (report.keyForgotten) lines.push('Their data key was destroyed.');
  lines.push(
    audited
      ? 'The audit chain still verifies: countersign audit --verify.'
      : 'A file: store keeps no audit trail: this erasure is recorded nowhere else.',
  );
  return lines.join('\n');
}

export const erase: Command = async ({ values, context, out }) => {
  if (!values.principal)
    throw new InvalidInputError('Say whose data to erase: --principal ID.', {
      hint: 'The id sessions were started with (chat --user ID), e.g. countersign erase --principal c-100.',
    });
  const { erasePrincipal } = await import('../erasure/erase-principal.ts');
  const { store, checkpoints } = await storeOf(context);
  // With COUNTERSIGN_ENCRYPTION_KEYS the store carries its keyring: erasePrincipal forgets the key.
  // The app names the state keys that are a customer's (its `customerState`), if it can.
  const app = await context.app().catch(() => null);
  const state = app?.customerState?.(values.principal) ?? [];
  const options = { by: decider(values), checkpoints, state };
  const report = await erasePrincipal(store, values.principal, options);
  if (out.json) out.data(report);
  else out.print(describeErasure(report, store !== null));
  return 0;
};

export function describePurge(report: PurgeReport): string {
  const { counts, dryRun } = report;
  const removed = [
    counts.sessions ? plural(counts.sessions, 'finished session') : '',
    counts.runs ? plural(counts.runs, 'ended run') : '',
    counts.requests ? plural(counts.requests, 'decided request') : '',
  ].filter((part) => part !== '');
  const erased = counts.auditEntries
    ? `the data of ${plural(counts.auditEntries, 'audit entry', 'audit entries')}`
    : '';
  if (removed.length === 0 && erased === '') return 'Nothing is past its retention period.';
  const sentences: string[] = [];
  if (removed.length) sentences.push(`${dryRun ? 'Would remove' : 'Removed'} ${removed.join(', ')}.`);
  if (erased) sentences.push(`${dryRun ? 'Would erase' : 'Erased'} ${erased} (the chain stays).`);
  if (report.more) sentences.push('More is left; the next purge continues.');
  return sentences.join(' ');
}

export const purgeCommand: Command = async ({ values, context, out }) => {
  const policy = await context.retention();
  if (policy === undefined) {
    throw new ConfigError('COUNTERSIGN_RETENTION is not set, so nothing has a retention period.', {
      hint: 'Set periods per kind, e.g. COUNTERSIGN_RETENTION=sessions=90d,runs=30d,requests=90d,audit=7y.',
    });
  }
  const { purge } = await import('../erasure/purge.ts');
  const { store, checkpoints } = await storeOf(context);
  const report = await purge(store, {
    policy,
    checkpoints,
    dryRun: values['dry-run'] === true,
    by: decider(values),
  });
  if (out.json) out.data(report);
  else out.print(describePurge(report));
  return 0;
};
