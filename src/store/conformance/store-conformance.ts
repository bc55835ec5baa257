import { afterEach, beforeEach } from 'vitest';
import { type DataKeys, isDataKeys } from '../ports/data-keys.ts';
import { isOutbox, type Outbox } from '../ports/server/outbox.ts';
import { isWebSessionStore, type WebSessionStore } from '../ports/server/web-session-store.ts';
import type { Store } from '../store.ts';
import { approvalCases } from './approval-cases.ts';
import { auditCases } from './audit-cases.ts';
import { dataKeyCases } from './data-key-cases.ts';
import { deliveryCases } from './delivery-cases.ts';
import { erasureCases } from './erasure-cases.ts';
import type { ConformanceContext, PortContext } from './fixtures.ts';
import { describeSuite, type SkipEntry } from './harness.ts';
import { leaseCases } from './lease-cases.ts';
import { ledgerCases } from './ledger-cases.ts';
import { pageCases } from './page-cases.ts';
import { ruleCases } from './rule-cases.ts';
import { sessionCases } from './session-cases.ts';
import { stalledCases } from './stalled-cases.ts';
import { stateCases } from './state-cases.ts';
import { statsCases } from './stats-cases.ts';
import { timerCases } from './timer-cases.ts';
import { transferCases } from './transfer-cases.ts';
import { webSessionCases } from './web-session-cases.ts';

/**
 * How the kit gets stores of a backend (LangGraph's checkpoint-validation takes the same
 * shape). Every test gets its own `create()`d store; the kit closes it, then calls `destroy`.
 */
export interface StoreInitializer<S extends Store = Store> {
  /** Shown in the suite titles: `Store conformance: NAME`. */
  name: string;
  /** An empty store. */
  create(): Promise<S>;
  /** Drops what `create` made (a temp directory, a schema), after the kit closed the store. */
  destroy?(store: S): Promise<void>;
  /**
   * A second store on the same data as `store` (another connection pool, another SQLite
   * connection), as a second process would open it. The cross-process cases (two claims
   * racing, a sign-in seen by another server) use it; without it they use `store` itself.
   */
  sibling?(store: S): Promise<Store>;
  /**
   * True for a store whose codec encrypts effect previews at rest (`src/crypto/`): SQL cannot
   * look inside them, so a text search matches the customer only, and the paging case checks
   * exactly that instead of matching words of the effect.
   */
  sealsEffects?: boolean;
}

/** The core Store ports, one suite each, in the order they run. */
const STORE_SUITES = {
  sessions: sessionCases,
  leases: leaseCases,
  stalled: stalledCases,
  approvals: approvalCases,
  paging: pageCases,
  stats: statsCases,
  timers: timerCases,
  rules: ruleCases,
  ledger: ledgerCases,
  audit: auditCases,
  state: stateCases,
  transfer: transferCases,
  erasure: erasureCases,
} as const satisfies Record<string, (ctx: ConformanceContext) => void>;

/**
 * The same context, for a server port the store object also implements: a backend that
 * selects the suite of a port it does not keep is told so, rather than failing every case.
 */
function portOf<P>(ctx: ConformanceContext, has: (store: Store) => boolean, port: string): PortContext<P> {
  const checked = (store: Store): P => {
    if (!has(store))
      throw new Error(`countersign/testing: this store keeps no ${port}; leave its suite out of \`suites\`.`);
    return store as unknown as P;
  };
  return { store: () => checked(ctx.store()), sibling: async () => checked(await ctx.sibling()) };
}

/**
 * The ports beside Store (the webhook outbox and inbox sign-ins, src/store/ports/server/, and
 * the wrapped data keys an encrypting codec needs, src/store/ports/data-keys.ts): not
 * part of `Store`, selected apart from the core suites because a library-only backend need
 * not keep them; `countersign serve` does. They run on the store object, which must also
 * implement the port (the built-in stores do).
 */
const SERVER_STORE_SUITES = {
  deliveries: (ctx) => deliveryCases(portOf<Outbox>(ctx, isOutbox, 'webhook outbox (Outbox)')),
  webSessions: (ctx) =>
    webSessionCases(portOf<WebSessionStore>(ctx, isWebSessionStore, 'inbox sign-ins (WebSessionStore)')),
  dataKeys: (ctx) => dataKeyCases(portOf<DataKeys>(ctx, isDataKeys, 'wrapped data keys (DataKeys)')),
} as const satisfies Record<string, (ctx: ConformanceContext) => void>;

export type StoreSuiteName = keyof typeof STORE_SUITES | keyof typeof SERVER_STORE_SUITES;

export interface StoreConformanceOptions {
  /** Which suites to run; all of `STORE_SUITES` when left out. */
  suites?: readonly StoreSuiteName[];
  /** Tests this backend does not support, reported as skipped with the reason. */
  skip?: readonly SkipEntry[];
}

const ALL_SUITES: Record<StoreSuiteName, (ctx: ConformanceContext) => void> = {
  ...STORE_SUITES,
  ...SERVER_STORE_SUITES,
};

/** The core suites' names: what `describeStoreConformance` runs unless told otherwise. */
export const CORE_STORE_SUITES = Object.keys(STORE_SUITES) as readonly StoreSuiteName[];

/** The server ports' suite names (`deliveries`, `webSessions`, `dataKeys`). */
export const SERVER_STORE_SUITE_NAMES = Object.keys(SERVER_STORE_SUITES) as readonly StoreSuiteName[];

/** Every suite name, core and server ports: what countersign's own backends run. */
export const ALL_STORE_SUITES: readonly StoreSuiteName[] = [
  ...CORE_STORE_SUITES,
  ...SERVER_STORE_SUITE_NAMES,
];

/**
 * The behaviour every Store backend must share, as vitest suites: `Store conformance: NAME`
 * with one describe block per port. Each case gets a fresh store from `initializer`.
 */
export function describeStoreConformance<S extends Store>(
  initializer: StoreInitializer<S>,
  options: StoreConformanceOptions = {},
): void {
  const selected = options.suites ?? CORE_STORE_SUITES;
  for (const suite of selected)
    if (!(suite in ALL_SUITES))
      throw new Error(
        `countersign/testing: no Store suite "${suite}"; the suites are ${ALL_STORE_SUITES.join(', ')}.`,
      );

  describeSuite(`Store conformance: ${initializer.name}`, options.skip ?? [], () => {
    let current: S | undefined;
    const siblings: Store[] = [];

    const open = async (): Promise<{ store: S; cleanup: () => Promise<void> }> => {
      const store = await initializer.create();
      return { store, cleanup: async () => initializer.destroy?.(store) };
    };

    beforeEach(async () => {
      current = await initializer.create();
    });

    afterEach(async () => {
      for (const sibling of siblings.splice(0)) await sibling.close();
      if (current === undefined) return;
      const store = current;
      current = undefined;
      await store.close();
      await initializer.destroy?.(store);
    });

    const ctx: ConformanceContext = {
      store: () => {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        return current;
      },
      async sibling() {
        if (current === undefined) throw new Error('conformance: no store outside a test');
        if (initializer.sibling === undefined) return current;
        const sibling = await initializer.sibling(current);
        siblings.push(sibling);
        return sibling;
      },
      fresh: open,
      sealsEffects: initializer.sealsEffects ?? false,
    };

    for (const suite of selected) ALL_SUITES[suite](ctx);
  });
}
