import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Agent } from '../agent/create-agent.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { StateKey } from '../erasure/erase-principal.ts';
import type { Workflow } from '../workflow/define-workflow.ts';

/** What an application module (COUNTERSIGN_APP) exports. */
export interface AppModule {
  agents: Agent[];
  /** Workflows `countersign run start WORKFLOW` can start (optional). */
  workflows?: Workflow[];
  /** The customer the interactive demo signs in as, if the app has one. */
  demoPrincipal?: string;
  /**
   * The application-state keys that hold one customer's data (a cart, a profile): erasing the
   * customer overwrites them. countersign cannot tell whose a key is; the app can.
   */
  customerState?: (principal: string) => readonly StateKey[];
}

// The examples sit beside the sources: .ts in a checkout, compiled .js in an installed package.
const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
const builtIn: Record<string, string> = {
  bookstore: `../../examples/bookstore/app.${ext}`,
  kitchen: `../../examples/kitchen/app.${ext}`,
};

/** `bookstore` (default), `kitchen`, or a path to a module exporting `agents`. */
export async function loadApp(
  spec = process.env.COUNTERSIGN_APP || 'bookstore',
  cwd = process.cwd(),
): Promise<AppModule> {
  const builtInPath = builtIn[spec];
  const url = builtInPath
    ? new URL(builtInPath, import.meta.url).href
    : pathToFileURL(isAbsolute(spec) ? spec : resolve(cwd, spec)).href;
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(url)) as Record<string, unknown>;
  } catch (cause) {
    throw new ConfigError(`Cannot load the app "${spec}": ${whyNotLoaded(cause, url)}.`, {
      hint: 'Set COUNTERSIGN_APP to bookstore, kitchen, or the path of a module that exports `agents`.',
      cause,
    });
  }
  const source = (loaded.default && typeof loaded.default === 'object' ? loaded.default : loaded) as Record<
    string,
    unknown
  >;
  const agents = source.agents;
  const workflows = Array.isArray(source.workflows) ? (source.workflows as Workflow[]) : undefined;
  // An app of workflows only is an app too.
  if ((!Array.isArray(agents) || agents.length === 0) && !workflows?.length) {
    throw new ConfigError(`The app "${spec}" exports no agents.`, {
      hint: 'Export `agents`: an array of createAgent(...) results (or `workflows`: defineWorkflow(...) results).',
    });
  }
  return {
    agents: Array.isArray(agents) ? (agents as Agent[]) : [],
    ...(workflows ? { workflows } : {}),
    ...(typeof source.demoPrincipal === 'string' ? { demoPrincipal: source.demoPrincipal } : {}),
    ...(typeof source.customerState === 'function'
      ? { customerState: source.customerState as (principal: string) => readonly StateKey[] }
      : {}),
  };
}

/**
 * Why an app did not load, in the app's terms: Node's message names the module that tried to
 * import it (this file, inside countersign), which tells the reader nothing.
 */
function whyNotLoaded(cause: unknown, url: string): string {
  const error = cause as NodeJS.ErrnoException & { url?: string };
  const message = (error instanceof Error ? error.message : String(cause)).split('\n')[0]!;
  if (
    error?.code === 'ERR_MODULE_NOT_FOUND' &&
    (error.url === url || message.includes(`'${fileURLToPath(url)}'`))
  )
    return `there is no file ${fileURLToPath(url)}`;
  return `it failed while loading: ${message.replace(/ imported from \S+$/, '').replace(/\.$/, '')}`;
}
