import { afterEach, beforeEach, describe } from 'vitest';
import type { Store } from '../store.ts';
import { approvalCases } from './approval-cases.ts';
import { auditCases } from './audit-cases.ts';
import type { ConformanceContext, StoreFactory } from './fixtures.ts';
import { leaseCases } from './lease-cases.ts';
import { ledgerCases } from './ledger-cases.ts';
import { ruleCases } from './rule-cases.ts';
import { sessionCases } from './session-cases.ts';
import { stalledCases } from './stalled-cases.ts';
import { stateCases } from './state-cases.ts';
import { transferCases } from './transfer-cases.ts';

export type { StoreFactory } from './fixtures.ts';

/**
 * The behaviour every Store backend must share. A backend's test file calls this with a
 * factory for empty stores; each case gets its own store and the factory's cleanup. The
 * server ports (outbox, sign-ins) have their own suite: server-port-conformance.ts.
 */
export function describeStoreConformance(name: string, factory: StoreFactory): void {
  describe(`Store conformance: ${name}`, () => {
    let current: Awaited<ReturnType<StoreFactory>> | undefined;
    const siblings: Store[] = [];

    beforeEach(async () => {
      current = await factory();
    });

    afterEach(async () => {
      for (const sibling of siblings.splice(0)) await sibling.close();
      if (current === undefined) return;
      await current.store.close();
      await current.cleanup();
      current = undefined;
    });

    const ctx: ConformanceContext = {
      store: () => {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        return current.store;
      },
      async sibling() {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        if (current.sibling === undefined) return current.store;
        const sibling = await current.sibling();
        siblings.push(sibling);
        return sibling;
      },
      fresh: factory,
    };

    sessionCases(ctx);
    leaseCases(ctx);
    stalledCases(ctx);
    approvalCases(ctx);
    ruleCases(ctx);
    ledgerCases(ctx);
    auditCases(ctx);
    stateCases(ctx);
    transferCases(ctx);
  });
}
