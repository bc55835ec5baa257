// A process that holds a session's lease as a run does (taken through acquireSessionLease,
// renewed every third of its term) until it is killed: for cross-host-lease.test.ts.
// Prints {"owner": …} once it holds it. Usage: node lease-holder.fixture.ts STORE SESSION
import { acquireSessionLease, keepLease, newLeaseOwner } from '../../src/agent/lease.ts';
import { openStore } from '../../src/store/open-store.ts';

const [spec = '', session = ''] = process.argv.slice(2);
const store = await openStore(spec);
const owner = await newLeaseOwner(store);
await acquireSessionLease(store, session, owner, { leaseMs: 20_000, waitMs: 5_000 });
keepLease(store, session, owner, 20_000);
process.stdout.write(`${JSON.stringify({ owner })}\n`);
setInterval(() => undefined, 1 << 30);
