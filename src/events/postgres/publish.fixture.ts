// Child process of the cross-process event test: publishes the events given as one JSON
// array on CHANNEL, then closes and prints {"ok":true}.
//   node publish.fixture.ts URL CHANNEL EVENTS_JSON
import type { CountersignEvent } from '../event-bus.ts';
import { createPostgresEventBus } from './postgres-event-bus.ts';

const [url, channel, json] = process.argv.slice(2);
if (!url || !channel || !json) throw new Error('usage: publish.fixture.ts URL CHANNEL EVENTS_JSON');

const bus = createPostgresEventBus({ connectionString: url, channel });
for (const event of JSON.parse(json) as CountersignEvent[]) await bus.publish(event);
await bus.close();
process.stdout.write(JSON.stringify({ ok: true }));
