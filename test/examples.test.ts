import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('the README library example', () => {
  it('runs: the call waits, is approved by id, and runs once', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'countersign-example-'));
    const script = resolve(import.meta.dirname, '../examples/library/refund-desk.ts');
    const run = spawnSync(process.execPath, [script], { cwd, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('awaiting_approval cancel_order { orderId: 1044 }');
    expect(run.stdout).toMatch(/completed — .*Order 1044 cancelled \(key countersign:apr_[a-z2-7]{32}\)/);
  });
});
