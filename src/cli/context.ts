import type { Agent } from '../agent/create-agent.ts';
import type { ExportKeyring } from '../agent/export-keys.ts';
import type { AppModule } from '../app/load-app.ts';
import type { ApprovalRequest } from '../core/approval.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { RetentionPolicy } from '../core/retention.ts';
import type { AnyLanguageModel } from '../model/language-model.ts';
import type { RequestReader } from '../requests/request-books.ts';
import type { RequestDesk } from '../requests/request-desk.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { Store } from '../store/store.ts';
import type { WorkflowRunner } from '../workflow/runner.ts';

/**
 * What a command needs, opened (and imported) lazily: listing pending requests touches
 * neither the app's tools nor the model, so it starts without loading either.
 */
export class CliContext {
  private storePromise: Promise<Store> | undefined;
  private appPromise: Promise<AppModule> | undefined;
  private modelPromise: Promise<AnyLanguageModel> | undefined;
  private checkpointsPromise: Promise<CheckpointStore> | undefined;
  private readonly requests = new Map<string, Promise<ApprovalRequest>>();
  private readonly env: NodeJS.ProcessEnv;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.env = env;
  }

  /**
   * `check: 'quick'` looks for damage in a SQLite file on open; it matters only on the first
   * call, so the commands that want it (serve, worker, audit --verify) ask first.
   */
  store(options: { check?: 'quick' } = {}): Promise<Store> {
    this.storePromise ??= import('../store/open-store.ts').then(({ openStore }) =>
      openStore(this.env.COUNTERSIGN_STORE, { ...options, env: this.env }),
    );
    return this.storePromise;
  }

  /** Where workflow runs live; the same connection as `store()` when that store keeps them too. */
  checkpoints(): Promise<CheckpointStore> {
    this.checkpointsPromise ??= import('../store/open-checkpoint-store.ts').then(({ openCheckpointStore }) =>
      openCheckpointStore(this.env.COUNTERSIGN_STORE, { store: () => this.store(), env: this.env }),
    );
    return this.checkpointsPromise;
  }

  /** COUNTERSIGN_RETENTION, parsed (CONFIG_ERROR when malformed); undefined when unset. */
  async retention(): Promise<RetentionPolicy | undefined> {
    const text = this.env.COUNTERSIGN_RETENTION;
    if (text === undefined || text.trim() === '') return undefined;
    const { parseRetention } = await import('../core/retention.ts');
    return parseRetention(text);
  }

  /** COUNTERSIGN_EXPORT_KEY: signs session exports and verifies imports; undefined when unset. */
  async exportKeys(): Promise<ExportKeyring | undefined> {
    const { parseExportKeys } = await import('../agent/export-keys.ts');
    return parseExportKeys(this.env.COUNTERSIGN_EXPORT_KEY);
  }

  app(): Promise<AppModule> {
    this.appPromise ??= import('../app/load-app.ts').then(({ loadApp }) =>
      loadApp(this.env.COUNTERSIGN_APP || 'bookstore'),
    );
    return this.appPromise;
  }

  model(): Promise<AnyLanguageModel> {
    this.modelPromise ??= import('../model/resolve-model.ts').then(({ resolveModel }) =>
      resolveModel(this.env.COUNTERSIGN_MODEL || 'demo', this.env),
    );
    return this.modelPromise;
  }

  /** The app's agent bound to this store and model: by name, or the app's first agent. */
  async agent(name?: string): Promise<Agent> {
    const app = await this.app();
    const agent = name ? app.agents.find((candidate) => candidate.name === name) : app.agents[0];
    if (!agent) {
      throw new NotFoundError(`The app has no agent named ${name}.`, {
        hint: `The app ${this.env.COUNTERSIGN_APP || 'bookstore'} has ${app.agents.map((candidate) => candidate.name).join(', ') || 'no agents'}. Set COUNTERSIGN_APP to the app the request or session came from, or pass --agent with one of those.`,
      });
    }
    return agent.with({ store: await this.store(), model: await this.model() });
  }

  /**
   * Where requests of both kinds are read: the store, plus a separate checkpoint store's port
   * requests (COUNTERSIGN_STORE=file:DIR keeps runs apart from the agents).
   */
  async requestBook(): Promise<RequestReader> {
    const [{ isRequestReader, requestBooks }, store, checkpoints] = await Promise.all([
      import('../requests/request-books.ts'),
      this.store().then(
        (opened) => ({ opened, error: null }),
        (error: unknown) => ({ opened: null, error }),
      ),
      this.checkpoints().catch(() => null),
    ]);
    // file:DIR keeps runs only: their port requests are the whole book then.
    if (store.opened === null && !isRequestReader(checkpoints)) throw store.error;
    return requestBooks([store.opened, isRequestReader(checkpoints) ? checkpoints : null]);
  }

  /** A request of either kind, read once per command. */
  request(requestId: string): Promise<ApprovalRequest> {
    let read = this.requests.get(requestId);
    if (!read) {
      read = this.requestBook().then(async (store) => {
        const request = await store.getApproval(requestId);
        if (!request)
          throw new NotFoundError(`No request ${requestId}.`, {
            hint: 'List waiting requests with `countersign pending`.',
          });
        return request;
      });
      this.requests.set(requestId, read);
    }
    return read;
  }

  /** The agent that owns a request, so a decision continues the right session. */
  async agentForRequest(requestId: string): Promise<Agent> {
    return this.agent((await this.request(requestId)).agent);
  }

  /** The app's workflow runs, their agents bound to this store and model. */
  async runner(withWorkflows = true): Promise<WorkflowRunner> {
    const [{ createWorkflowRunner }, checkpoints, app] = await Promise.all([
      import('../workflow/runner.ts'),
      this.checkpoints(),
      withWorkflows ? this.app() : undefined,
    ]);
    return createWorkflowRunner({
      workflows: app?.workflows ?? [],
      checkpoints,
      bindAgent: async (agent) => agent.with({ store: await this.store(), model: await this.model() }),
    });
  }

  /** The one decide path for both kinds of request (see src/requests/request-desk.ts). */
  async requestDesk(): Promise<RequestDesk> {
    const [{ createRequestDesk }, store, app] = await Promise.all([
      import('../requests/request-desk.ts'),
      this.requestBook(),
      this.app(),
    ]);
    // Claims are kept by the agents' store; a file store of runs opens none (and keeps no claims).
    const timers = await this.store().catch((error: unknown) =>
      CountersignError.is(error) && error.code === 'CONFIG_ERROR' ? undefined : Promise.reject(error),
    );
    return createRequestDesk({
      store,
      ...(timers ? { timers } : {}),
      agentFor: (name) => this.agent(name),
      runner: await this.runner(),
      workflows: app.workflows ?? [],
    });
  }

  async agentForSession(sessionId: string): Promise<Agent> {
    const session = await (await this.store()).getSession(sessionId);
    if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
    return this.agent(session.agent);
  }

  async close(): Promise<void> {
    const checkpoints = await this.checkpointsPromise?.catch(() => undefined);
    const store = await this.storePromise?.catch(() => undefined);
    if (checkpoints && checkpoints !== (store as unknown)) await checkpoints.close();
    if (store) await store.close();
  }
}

export function requireArg(value: string | undefined, usage: string): string {
  if (value === undefined || value === '') throw new InvalidInputError(`Missing argument. Usage: ${usage}`);
  return value;
}
