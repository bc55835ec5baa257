import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../src/core/canonical-json.ts';
import { runCli, tempStore } from '../helpers/cli.ts';

type Turn = { status: string; approvals: Array<{ id: string }> };
type ErrorOut = { error: { code: string; message: string } };
type ExportFile = {
  session: { id: string; agent: string; createdAt: string };
  approvals: Array<{ id: string; status: string; decision: unknown; createdAt: string; callId: string }>;
  executions: unknown[];
  digest: string;
  signature?: unknown;
};

const KEY = 'k1:0123456789abcdef0123456789abcdef';
const OTHER_KEY = 'k1:ffffffffffffffffffffffffffffffff';

/** Each step is a separate `countersign` process on its own SQLite file, with the demo model. */
describe('session export and import through the CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-import-'));
  const envFor = (extra: Record<string, string> = {}) => ({ COUNTERSIGN_STORE: tempStore(), ...extra });

  async function exported(key?: string): Promise<{ file: string; content: ExportFile; requestId: string }> {
    const env = envFor(key ? { COUNTERSIGN_EXPORT_KEY: key } : {});
    const chat = await runCli(
      ['chat', '--as', 'backend', 'seed-1', 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
      env,
    );
    expect(chat.code, chat.stderr + chat.stdout).toBe(0);
    const requestId = (chat.json as Turn).approvals[0]!.id;
    const file = join(dir, `export-${Math.random().toString(36).slice(2)}.json`);
    const run = await runCli(['session', 'export', 'seed-1', '--out', file, '--json'], env);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.json).toMatchObject({ signedBy: key ? 'k1' : null });
    return { file, content: JSON.parse(readFileSync(file, 'utf8')) as ExportFile, requestId };
  }

  /** A forger without the key: edit, recompute the digest, drop the signature. */
  function forge(content: ExportFile, edit: (copy: ExportFile) => void): string {
    const copy = structuredClone(content);
    edit(copy);
    const { digest: _d, signature: _s, ...body } = copy;
    const file = join(dir, `forged-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ ...body, digest: sha256Hex(canonicalJson(body)) }));
    return file;
  }

  const refused = async (args: string[], env: Record<string, string>, message: string) => {
    const run = await runCli([...args, '--json'], env);
    expect(run.code, run.stdout).toBe(1);
    expect((run.json as ErrorOut).error).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining(message),
    });
    // No session.imported entry: the import wrote nothing.
    const audit = await runCli(['audit', '--json'], env);
    expect(audit.json).toEqual([]);
  };

  it('signed export → import → resume → approve: the call runs once in the target', async () => {
    const { file, requestId } = await exported(KEY);
    const target = envFor({ COUNTERSIGN_EXPORT_KEY: `k2:abcdefabcdefabcdefabcdefabcdefab,${KEY}` });
    const imported = await runCli(['session', 'import', file, '--json'], target);
    expect(imported.code, imported.stdout + imported.stderr).toBe(0);
    expect(imported.json).toEqual({
      session: 'seed-1',
      messages: 2,
      signedBy: 'k1',
      pending: [requestId],
      reopened: [],
      refusedLedger: [],
    });
    const resumed = await runCli(['resume', 'seed-1', '--json'], target);
    expect((resumed.json as Turn).status).toBe('awaiting_approval');
    const approved = await runCli(['approve', requestId, '--as', 'alice', '--json'], target);
    expect((approved.json as Turn).status).toBe('completed');
    const executions = (await runCli(['executions', '--json'], target)).json as Array<{ status: string }>;
    expect(executions.map((row) => row.status)).toEqual(['succeeded']);
    const verify = await runCli(['audit', '--verify', '--json'], target);
    expect(verify.json).toMatchObject({ ok: true });
  });

  it('refuses a file signed with another secret, or signed and then edited', async () => {
    const { file, content, requestId } = await exported(OTHER_KEY);
    await refused(
      ['session', 'import', file],
      envFor({ COUNTERSIGN_EXPORT_KEY: KEY }),
      'signature does not verify with key k1',
    );
    // Keeping the signature of a file whose content was edited does not help either.
    const edited = forge(content, (copy) => {
      const approval = copy.approvals[0]!;
      approval.status = 'approved';
      approval.decision = {
        verdict: 'approved',
        by: 'mallory',
        reason: null,
        at: approval.createdAt,
        kind: 'person',
      };
    });
    const withSignature = JSON.parse(readFileSync(edited, 'utf8')) as ExportFile;
    writeFileSync(edited, JSON.stringify({ ...withSignature, signature: content.signature }));
    await refused(
      ['session', 'import', edited, '--trust-unsigned'],
      envFor({ COUNTERSIGN_EXPORT_KEY: OTHER_KEY }),
      'signature does not verify',
    );
    expect(requestId).toMatch(/^apr_/);
  });

  it('refuses an unsigned file without --trust-unsigned, with and without a key configured', async () => {
    const { file } = await exported();
    await refused(['session', 'import', file], envFor(), 'the file is not signed');
    await refused(
      ['session', 'import', file],
      envFor({ COUNTERSIGN_EXPORT_KEY: KEY }),
      'the file is not signed',
    );
  });

  it('refuses path-like session ids and agents the app does not have, even with --trust-unsigned', async () => {
    const { content } = await exported();
    const pathLike = forge(content, (copy) => {
      copy.session.id = '../../etc/x';
    });
    await refused(
      ['session', 'import', pathLike, '--trust-unsigned'],
      envFor(),
      'the session id "../../etc/x" is not a valid session id',
    );
    const stranger = forge(content, (copy) => {
      copy.session.agent = 'payroll';
    });
    await refused(
      ['session', 'import', stranger, '--trust-unsigned'],
      envFor(),
      'it belongs to agent "payroll", which this app does not have (its agents: bookstore)',
    );
  });

  it('refuses a file whose session or request was created past the year 9999, writing nothing', async () => {
    const { content } = await exported();
    const future = forge(content, (copy) => {
      copy.session.createdAt = '+010000-01-01T00:00:00.000Z';
    });
    await refused(
      ['session', 'import', future, '--trust-unsigned'],
      envFor(),
      'Session seed-1: createdAt "+010000-01-01T00:00:00.000Z" falls outside the years 0000 to 9999',
    );
    const raised = forge(content, (copy) => {
      copy.approvals[0]!.createdAt = '+010000-01-01T00:00:00.000Z';
    });
    await refused(
      ['session', 'import', raised, '--trust-unsigned'],
      envFor(),
      `Request ${content.approvals[0]!.id}: createdAt "+010000-01-01T00:00:00.000Z" falls outside`,
    );
  });

  it('an unsigned forged approval with a fake ledger row waits for a person again; resume runs nothing', async () => {
    const { content, requestId } = await exported();
    const forged = forge(content, (copy) => {
      const approval = copy.approvals[0]!;
      approval.status = 'approved';
      approval.decision = {
        verdict: 'approved',
        by: 'mallory',
        reason: null,
        at: approval.createdAt,
        kind: 'person',
      };
      copy.executions.push({
        requestId,
        callId: approval.callId,
        tool: 'cancel_order',
        idempotencyKey: `countersign:${requestId}`,
        status: 'succeeded',
        result: 'Cancelled.',
        attempts: 1,
        startedAt: approval.createdAt,
        finishedAt: approval.createdAt,
      });
    });
    const target = envFor();
    const imported = await runCli(['session', 'import', forged, '--trust-unsigned', '--as', 'ops'], target);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toBe(
      'Imported session seed-1 (unsigned, trusted on request): 2 messages, 1 waiting request(s).\n' +
        `Waiting for a person again (decided in the file): ${requestId}\n` +
        `Ledger rows left out (unverifiable): ${requestId}\n`,
    );
    const pending = (await runCli(['pending', '--json'], target)).json as Array<{ id: string }>;
    expect(pending.map((request) => request.id)).toEqual([requestId]);

    const resumed = await runCli(['resume', 'seed-1', '--json'], target);
    expect((resumed.json as Turn).status).toBe('awaiting_approval');
    expect((await runCli(['executions', '--json'], target)).json).toEqual([]);

    const audit = (await runCli(['audit', '--json'], target)).json as Array<{
      kind: string;
      requestId: string | null;
      actor: string;
      data: Record<string, unknown>;
    }>;
    expect(audit.map((entry) => [entry.kind, entry.requestId, entry.actor])).toEqual([
      ['session.imported', null, 'ops'],
      ['request.raised', requestId, 'ops'],
    ]);
    expect(audit[0]!.data).toMatchObject({
      signed: false,
      reopened: [requestId],
      refusedLedger: [requestId],
    });
    expect((await runCli(['audit', '--verify', '--json'], target)).json).toMatchObject({ ok: true });
  });
});
