// A process that holds a liveness token until it is killed: for postgres-liveness.test.ts.
// Prints {"token": …, "pid": …} once it holds it. Usage: node holder.fixture.ts URL
import { createPostgresLiveness } from './postgres-liveness.ts';

const [url = ''] = process.argv.slice(2);
const liveness = createPostgresLiveness({
  connectionString: url,
  query: async () => {
    throw new Error('this fixture asks nothing');
  },
});
process.stdout.write(`${JSON.stringify({ token: await liveness.token(), pid: process.pid })}\n`);
// The liveness socket is unref'd: this timer is what keeps the process running.
setInterval(() => undefined, 1 << 30);
