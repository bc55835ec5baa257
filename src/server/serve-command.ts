import { livenessOf } from '../agent/lease.ts';
import type { AppModule } from '../app/load-app.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { describeRetention } from '../core/retention.ts';
import type { EventBus } from '../events/event-bus.ts';
import { livenessLogLine, watchLiveness } from '../liveness/liveness-log.ts';
import type { AnyLanguageModel } from '../model/language-model.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { Store } from '../store/store.ts';
import { createServer } from './create-server.ts';
import { chatBannerLines, serveChat } from './serve-chat.ts';
import { serverConfigFromEnv } from './server-config.ts';
import { startServer } from './start-server.ts';

export interface ServeInput {
  app: AppModule;
  store: Store;
  /** Where the app's workflow runs live, when it has workflows. */
  checkpoints?: CheckpointStore;
  model: AnyLanguageModel;
  /** A description of the model for the banner (the demo model says it is not a real one). */
  modelName: string;
  env: NodeJS.ProcessEnv;
  host?: string | undefined;
  port?: string | undefined;
  chat: boolean;
  print(text: string): void;
  /** Resolves when the server should stop (SIGINT/SIGTERM by default). */
  until?: Promise<void>;
}

/** `countersign serve`: the API, the inbox and (with --chat) the customer chat, until stopped. */
export async function serveCommand(input: ServeInput): Promise<number> {
  const port = Number(input.port ?? input.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidInputError(`--port must be a port number, not ${input.port}.`);
  const host = input.host ?? '127.0.0.1';
  const config = serverConfigFromEnv(input.env);
  const chat = input.chat
    ? await serveChat({ secret: config.chatSecret, demoCustomer: input.app.demoPrincipal, nowMs: Date.now() })
    : null;
  const events = await sharedEventBus(input.store, input.env);
  const server = createServer({
    ...(events ? { events } : {}),
    agents: input.app.agents,
    store: input.store,
    model: input.model,
    approvers: config.approvers,
    ...(config.identityHeader ? { identityHeader: config.identityHeader } : {}),
    ...(config.rolesHeader ? { rolesHeader: config.rolesHeader } : {}),
    ...(config.webhook ? { webhook: config.webhook } : {}),
    ...(config.publicOrigin ? { publicOrigin: config.publicOrigin } : {}),
    ...(config.trustProxy ? { trustProxy: config.trustProxy } : {}),
    secureCookies: config.secureCookies,
    metrics: config.metrics,
    ...(config.retention ? { retention: { policy: config.retention } } : {}),
    ...(input.app.customerState ? { customerState: input.app.customerState } : {}),
    ...(chat ? { chat: { secret: chat.secret } } : {}),
    ...(input.app.workflows?.length ? { workflows: input.app.workflows } : {}),
    ...(input.checkpoints ? { checkpoints: input.checkpoints } : {}),
  });
  const running = await startServer(server, { host, port });
  const base = config.publicOrigin ?? running.url.replace('://[::1]', '://localhost');
  const lines = [
    `countersign serving ${[...input.app.agents.map((agent) => agent.name), ...(input.app.workflows ?? []).map((workflow) => `workflow ${workflow.name}`)].join(', ')} on ${running.url}`,
    `  Model: ${input.modelName}. Store: ${describeStore(input.store)}.`,
    `  Inbox: ${base}/`,
  ];
  if (chat) lines.push(...chatBannerLines(base, chat));
  lines.push(`  API:   ${base}/v1/openapi.json`);
  if (config.retention) lines.push(`  Retention: ${describeRetention(config.retention)}, purged every hour`);
  if (config.demoApprover) {
    lines.push(
      `  Sign in as ${config.demoApprover.name} (${config.demoApprover.roles.join(', ')}) with the token ${config.demoApprover.token}`,
      `    or open ${base}/login#token=${config.demoApprover.token}`,
      '  (a new token every start; set COUNTERSIGN_TOKENS for your own approvers)',
    );
  } else {
    lines.push(
      `  Approvers: ${config.approvers.map((entry) => `${entry.name} (${entry.roles.join('+') || 'no roles'})`).join(', ') || 'none'}${config.identityHeader ? `; identity header ${config.identityHeader}` : ''}`,
    );
  }
  if (config.webhook) lines.push(`  Webhooks: ${config.webhook.url}`);
  lines.push('Press Ctrl+C to stop.');
  input.print(lines.join('\n'));
  // A line when the liveness lock (PostgreSQL) is lost, while it stays lost (throttled) and when
  // it is held again: while it is lost, processes on other hosts may take this one's sessions.
  const unwatch = watchLiveness(livenessOf(input.store), (event) =>
    input.print(livenessLogLine(event, 'server')),
  );
  await (input.until ?? untilSignal());
  unwatch();
  await running.close();
  await events?.close();
  return 0;
}

/**
 * On PostgreSQL every instance publishes and listens on one NOTIFY channel per schema, so a
 * browser connected to any instance sees requests and decisions made on any other.
 */
async function sharedEventBus(store: Store, env: NodeJS.ProcessEnv): Promise<EventBus | undefined> {
  const spec = env.COUNTERSIGN_STORE;
  if (store.kind !== 'postgres' || !spec) return undefined;
  const { parsePostgresSpec } = await import('../store/postgres/postgres-spec.ts');
  const { createPostgresEventBus } = await import('../events/postgres/postgres-event-bus.ts');
  const { connectionString, schema } = parsePostgresSpec(spec, env);
  // A NOTIFY channel name is at most 63 characters, like the schema name it is made from.
  return createPostgresEventBus({ connectionString, channel: `countersign_events_${schema}`.slice(0, 63) });
}

function describeStore(store: Store): string {
  const path = (store as { path?: unknown }).path;
  return typeof path === 'string' ? `${store.kind} ${path}` : store.kind;
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
