// The inbox's list with many waiting requests, in Chromium over loopback HTTP.
//   node bench/inbox-list.ts            (WAITING=500 by default; WAITING=5000 for a larger backlog)
// Prints a table and writes bench/results/inbox-list-<timestamp>.json: for page 1 and for a
// page deep in the list (the keyset cursor), the server's time to render the HTML (median of
// 20), the store calls and rows one page load costs, the bytes sent, and in the browser the
// time to the load event, the DOM size and the page's height on a desktop and on a phone.
// Timings drift on a shared machine: the counts, and the deep/first ratio, are what to compare.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createAgent } from '../src/agent/create-agent.ts';
import { createServer } from '../src/server/create-server.ts';
import { startServer } from '../src/server/start-server.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { launchChromium } from '../test/browser/browser-env.ts';
import { countingStore } from '../test/helpers/counting-store.ts';
import { scriptModel } from '../test/helpers/script-model.ts';

const WAITING = Number(process.env.WAITING ?? 500);
const TOKEN = 'bench-approver-token-0123456789';

const shipParcel = defineTool({
  name: 'ship_parcel',
  description: 'Ship a parcel.',
  input: z.object({ parcel: z.number().int(), to: z.string() }),
  approval: 'always',
  effect: ({ parcel, to }) => `Ship parcel ${parcel} to ${to}.`,
  execute: ({ parcel }) => ({ ok: true, message: `Shipped parcel ${parcel}.` }),
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-bench-inbox-'));
  const inner = createSqliteStore({ path: join(dir, 'countersign.db') });
  const counted = countingStore(inner);
  const model = scriptModel(
    Array.from({ length: WAITING }, (_, i) => [
      { tool: 'ship_parcel', args: { parcel: i, to: `city ${i % 50}` } },
    ]),
  );
  const desk = createAgent({ name: 'parcels', instructions: 'Ship parcels.', tools: [shipParcel], model });
  const seedStart = performance.now();
  const seeded = desk.with({ store: inner });
  for (let i = 0; i < WAITING; i++)
    await seeded.chat(`parcel-${i}`, `Please ship parcel ${i}.`, { principal: `c-${i % 10}`, by: 'backend' });
  const seedMs = performance.now() - seedStart;

  const server = createServer({
    agents: [desk],
    store: counted.store,
    approvers: [{ name: 'bench', roles: ['support'], token: TOKEN }],
    watchIntervalMs: 0,
    log: () => undefined,
  });
  const running = await startServer(server, { host: '127.0.0.1', port: 0 });
  const browser = await launchChromium();
  try {
    const signIn = await fetch(`${running.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: running.url },
      body: new URLSearchParams({ token: TOKEN, next: '/' }),
    });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const get = (path: string) =>
      fetch(`${running.url}${path}`, { headers: { cookie, accept: 'text/html' } });

    // A page deep in the list: follow "Next page" links to about the middle.
    let deep = '/';
    for (let hops = 0; hops < Math.floor(WAITING / 50 / 2); hops++) {
      const html = await (await get(deep)).text();
      const next = /<a rel="next" href="([^"]+)"/.exec(html)?.[1];
      if (!next) break;
      deep = next.replaceAll('&amp;', '&');
    }

    const rows: Array<Record<string, number | string>> = [];
    for (const [label, path] of [
      ['page 1', '/'],
      ['deep page', deep],
    ] as const) {
      await get(path); // warm
      counted.reset();
      const response = await get(path);
      const bytes = (await response.arrayBuffer()).byteLength;
      const calls = counted.calls();
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const start = performance.now();
        await (await get(path)).arrayBuffer();
        times.push(performance.now() - start);
      }
      const measure = async (viewport: { width: number; height: number }) => {
        const context = await browser.newContext({ viewport });
        await context.addCookies([
          { name: cookie.split('=')[0]!, value: cookie.split('=')[1]!, url: running.url },
        ]);
        const page = await context.newPage();
        const loads: number[] = [];
        let height = 0;
        let nodes = 0;
        let rowsShown = 0;
        for (let i = 0; i < 5; i++) {
          await page.goto(`${running.url}${path}`, { waitUntil: 'load' });
          // A string: this runs in the page, whose DOM types the project's tsconfig does not load.
          const m = await page.evaluate<{
            load: number;
            height: number;
            nodes: number;
            rows: number;
          }>(`(() => {
            const nav = performance.getEntriesByType('navigation')[0];
            return {
              load: nav.loadEventStart - nav.startTime,
              height: document.documentElement.scrollHeight,
              nodes: document.getElementsByTagName('*').length,
              rows: document.querySelectorAll('#pending-list tr.row').length,
            };
          })()`);
          loads.push(m.load);
          height = m.height;
          nodes = m.nodes;
          rowsShown = m.rows;
        }
        await context.close();
        return { load: median(loads), height, nodes, rows: rowsShown };
      };
      const desktop = await measure({ width: 1280, height: 900 });
      const phone = await measure({ width: 390, height: 844 });
      rows.push({
        view: label,
        rows: desktop.rows,
        serverMsP50: Number(median(times).toFixed(1)),
        storeCalls: Object.values(calls).reduce((a, b) => a + b, 0),
        storeCallsByMethod: JSON.stringify(calls),
        bytes,
        browserLoadMs: Number(desktop.load.toFixed(1)),
        domNodes: desktop.nodes,
        heightDesktopPx: desktop.height,
        heightPhonePx: phone.height,
      });
    }
    const [first, second] = rows as [Record<string, number>, Record<string, number>];
    console.log(`inbox list, ${WAITING} waiting (seeded in ${(seedMs / 1000).toFixed(1)} s)`);
    console.table(rows);
    console.log(
      `deep page / page 1: server time ×${(second.serverMsP50! / first.serverMsP50!).toFixed(2)}, store calls ${second.storeCalls} vs ${first.storeCalls}`,
    );
    const out = join(import.meta.dirname, 'results');
    mkdirSync(out, { recursive: true });
    const file = join(out, `inbox-list-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify({ waiting: WAITING, seedMs, rows }, null, 2)}\n`);
    console.log(`wrote ${file.slice(file.indexOf('bench/'))}`);
  } finally {
    await browser.close();
    await running.close();
    await inner.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
