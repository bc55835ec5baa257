import { expireRequest } from '../../agent/session-run.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { emit } from '../../events/emit.ts';
import type { EventBus } from '../../events/event-bus.ts';
import { fireDueNudges } from '../../requests/fire-nudges.ts';
import type { DueWork } from '../../store/ports/request-timers.ts';
import type { Store } from '../../store/store.ts';
import type { WorkflowRunner } from '../../workflow/runner.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import { createStalledSweep, type StalledSweepOptions } from './stalled-sweep.ts';

/** What a store that cannot say what is due is taken to have: every sweep runs. */
const EVERYTHING_DUE: DueWork = { expiry: true, nudges: true, stalled: true };

/** Overdue tool calls expired per pass (the rest are due on the next). */
const EXPIRY_PAGE = 200;

export interface StoreWatcher {
  /** One pass now (tests call it instead of waiting for the timer). */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Keeps the store moving beyond this process. Every `intervalMs` it answers overdue
 * requests as expired (and lets their sessions continue, so the customer hears it), does
 * the same for workflow requests (`runs`: the expiry is recorded, then the run continues),
 * fires the reminders, escalations and expiry warnings that are due (fire-nudges.ts),
 * and continues sessions whose decider died before continuing them (stalled-sweep.ts).
 * What other processes raise and decide reaches the live views from the audit log
 * (live-feed.ts), not from here.
 */
export function watchStore(options: {
  store: Store;
  events: EventBus;
  agents: AgentRegistry;
  now: () => Date;
  intervalMs: number;
  log?: (line: string) => void;
  /** Limit and grace of the stalled-session sweep (see StalledSweepOptions). */
  stalled?: Pick<StalledSweepOptions, 'limit' | 'graceMs'>;
  /** The server's workflow runs, whose overdue requests are expired and whose runs continue. */
  runs?: Pick<WorkflowRunner, 'expire' | 'resume'>;
  /**
   * The runs' requests are rows of `store` (their checkpoints are kept by it), so the store's
   * `dueWork` covers their expiry too. Otherwise (a file checkpoint store beside a SQL one)
   * `runs.expire()` asks its own store every pass.
   */
  runsInStore?: boolean;
}): StoreWatcher {
  const { store, events, agents, now } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const sweepStalled = createStalledSweep({ store, agents, log, ...options.stalled });
  let running: Promise<void> | null = null;

  const pass = async () => {
    const at = now();
    const iso = at.toISOString();
    // One question first where the store can answer it (SQL stores: three EXISTS in one
    // statement), so an idle pass is one cheap round trip instead of three that fetch rows.
    const due = (await store.dueWork?.(iso)) ?? EVERYTHING_DUE;
    // Expiry walks the due-query (an index of pending rows by expiry), not every pending
    // request: agents' tool calls here, port requests in runs.expire() below.
    const resumeSessions = new Set<string>();
    const resumeRuns = new Set<string>();
    const overdue = due.expiry ? await store.listDue({ at: iso, limit: EXPIRY_PAGE, kind: 'tool-call' }) : [];
    for (const request of overdue) {
      if (!(await expireRequest(store, request, iso))) continue;
      if (request.run !== null) resumeRuns.add(request.run);
      emit(events, {
        type: 'approval.decided',
        at: iso,
        requestId: request.id,
        session: request.session,
        verdict: 'expired',
        by: 'countersign',
        kind: 'expiry',
      });
      resumeSessions.add(`${request.agent}\n${request.session}`);
    }
    for (const key of resumeSessions) {
      const [agentName, session] = key.split('\n') as [string, string];
      try {
        await agents.get(agentName).resume(session);
      } catch (error) {
        // Busy means another run is on it and will see the expiry itself.
        if (!(CountersignError.is(error) && error.code === 'SESSION_BUSY'))
          log(`countersign: could not continue session ${session} after expiry: ${String(error)}`);
      }
    }
    if (options.runs && (due.expiry || options.runsInStore !== true))
      await expireRuns(options.runs, resumeRuns);
    // Reminders, escalations and expiry warnings of both kinds (one table on the SQL stores),
    // from the nudge due-query; after expiry, so nothing expired is nudged.
    if (due.nudges) {
      try {
        await fireDueNudges({ store, now: at, events });
      } catch (error) {
        log(`countersign: could not send reminders: ${String(error)}`);
      }
    }
    await sweepStalled(at.getTime(), due.stalled);
  };

  /** Overdue workflow requests: recorded as expired (audited), then each run continues. */
  const expireRuns = async (runs: Pick<WorkflowRunner, 'expire' | 'resume'>, alsoResume: Set<string>) => {
    let expired: Awaited<ReturnType<WorkflowRunner['expire']>>;
    try {
      expired = await runs.expire();
    } catch (error) {
      log(`countersign: could not expire workflow requests: ${String(error)}`);
      return;
    }
    for (const run of new Set([...alsoResume, ...expired.map((request) => request.run)])) {
      try {
        await runs.resume(run);
      } catch (error) {
        // Busy means another process is continuing it and applies the expiry itself.
        if (!(CountersignError.is(error) && error.code === 'SESSION_BUSY'))
          log(`countersign: could not continue run ${run} after expiry: ${String(error)}`);
      }
    }
  };

  const tick = () => {
    running ??= pass()
      .catch((error: unknown) => log(`countersign: store watch failed: ${String(error)}`))
      .finally(() => {
        running = null;
      });
    return running;
  };
  // With no interval, nothing runs by itself: the caller (a test) ticks.
  const timer = options.intervalMs > 0 ? setInterval(() => void tick(), options.intervalMs) : null;
  timer?.unref();
  if (timer) void tick();

  return {
    tick,
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
