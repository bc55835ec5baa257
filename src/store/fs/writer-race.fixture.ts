// Child process of the file store's several-writers test: waits for the common start
// instant, then appends to a run of its own, races the other writers on a shared run
// (retrying each lost position from the new latest) and tries to answer one shared request.
import { createFileCheckpointStore } from './file-checkpoint-store.ts';

const [dir, writer, countText, startAtMs] = process.argv.slice(2);
if (!dir || !writer || !countText || !startAtMs) {
  throw new Error('usage: writer-race.fixture.ts DIR WRITER COUNT START_AT_MS');
}
const count = Number(countText);
const store = createFileCheckpointStore({ dir });
const wait = Number(startAtMs) - Date.now();
if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));

const body = { writer, pad: 'x'.repeat(200) };
const header = (run: string, seq: number, parent: string | null, id: string) => ({
  id,
  run,
  seq,
  parent,
  superstep: seq,
  createdAt: new Date().toISOString(),
  workflow: 'race',
  version: 1,
  status: 'running' as const,
  body,
});

const own = `own-${writer}`;
let parent: string | null = null;
for (let seq = 0; seq < count; seq++) {
  const id = `cp-${writer}-own-${seq}`;
  const result = await store.saveCheckpoint(header(own, seq, parent, id), parent);
  if (!result.saved) throw new Error(`lost a position on my own run ${own}`);
  parent = id;
}

let wins = 0;
let conflicts = 0;
while (wins < count) {
  const latest = await store.latestCheckpoint('shared');
  if (latest === null) throw new Error('the shared run was not created');
  const id = `cp-${writer}-shared-${wins}`;
  const result = await store.saveCheckpoint(header('shared', latest.seq + 1, latest.id, id), latest.id);
  if (result.saved) wins++;
  else conflicts++;
}

const answer = await store.decide('req_shared', {
  verdict: 'answered',
  response: { by: writer },
  by: writer,
  reason: null,
  at: new Date().toISOString(),
  kind: 'person',
});
process.stdout.write(JSON.stringify({ wins, conflicts, answered: answer.won }));
