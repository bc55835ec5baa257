import { ConfigError } from '../core/errors/config-error.ts';
import type { Command } from './command-input.ts';

/**
 * `countersign serve`. The server (Hono, the inbox, zod schemas) is imported here, so no
 * other command pays for loading it.
 */
export const serve: Command = async ({ values, context, out }) => {
  checkServedApp({
    app: process.env.COUNTERSIGN_APP,
    demo: values.demo ?? false,
    installed: runsInstalled(),
  });
  const { serveCommand } = await import('../server/serve-command.ts');
  const { describeModel } = await import('../model/resolve-model.ts');
  const model = await context.model();
  const app = await context.app();
  return serveCommand({
    app,
    // A long-running server looks for damage in a SQLite file before it serves from it.
    store: await context.store({ check: 'quick' }),
    ...(app.workflows?.length ? { checkpoints: await context.checkpoints() } : {}),
    model,
    modelName: describeModel(model),
    env: process.env,
    host: values.host,
    port: values.port,
    chat: values.chat ?? false,
    print: (text) => out.print(text),
  });
};

/**
 * Only a checkout serves the bookstore demo without being asked: an installed package started
 * without COUNTERSIGN_APP would otherwise run the demo's tools against your own store.
 */
export function checkServedApp(input: { app: string | undefined; demo: boolean; installed: boolean }): void {
  const app = input.app?.trim();
  if (input.demo && app && app !== 'bookstore')
    throw new ConfigError(`--demo serves the bookstore demo, but COUNTERSIGN_APP names ${app}.`, {
      hint: 'Drop --demo to serve your app, or unset COUNTERSIGN_APP to serve the demo.',
    });
  if (input.installed && !input.demo && !app)
    throw new ConfigError('countersign serve needs your app: COUNTERSIGN_APP is not set.', {
      hint: 'Set COUNTERSIGN_APP to the path of your module that exports `agents` (see docs/deployment.md), or pass --demo to try the bookstore demo.',
    });
}

/**
 * An installed package runs the compiled dist/ (see bin/countersign.js); a checkout runs the
 * sources.
 */
function runsInstalled(): boolean {
  return import.meta.url.endsWith('.js');
}
