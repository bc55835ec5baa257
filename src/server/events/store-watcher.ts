import { expireRequest } from '../../agent/session-run.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { guardedLog } from '../../core/guarded-log.ts';
import { emit } from '../../events/emit.ts';
import type { EventBus } from '../../events/event-bus.ts';
import { fireDueNudges } from '../../requests/fire-nudges.ts';
import type { DueWork } from '../../store/ports/request-timers.ts';
import type { Store } from '../../store/store.ts';
import type { WorkflowRunner } from '../../workflow/runner.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import { createStalledSweep, type StalledSweepOptions } from './stalled-sweep.ts';

/** What a store that cannot say what is due is taken to have: every sweep runs. */
const EVERYTHING_DUE: DueWork = { expiry: true, nudges: true, stalled: true, next: null };

/** The default longest sleep of a watcher that knows of nothing coming due (`idleMs`). */
export const WATCH_IDLE_MS = 10_000;

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
  /**
   * The pause between passes while there is work (something due, a session flagged, a store
   * that cannot say), and after any event on the bus: how late a sweep may come.
   */
  intervalMs: number;
  /**
   * The longest sleep while nothing is due (default WATCH_IDLE_MS, never below `intervalMs`).
   * A pass that finds nothing due sleeps until the soonest stored expiry or nudge, at most this
   * long; an event on the bus (a request raised or decided here, or on another instance over
   * PostgreSQL's bus) wakes it within `intervalMs`. What only this bounds: a request raised by
   * a process that announces nothing here (a CLI on the same SQLite file) that comes due
   * sooner than the soonest one stored, and a stalled session flagged by such a process.
   */
  idleMs?: number;
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
  const log = guardedLog(options.log ?? ((line: string) => process.stderr.write(`${line}\n`)));
  const sweepStalled = createStalledSweep({ store, agents, log, ...options.stalled });
  let running: Promise<void> | null = null;

  const idleMs = Math.max(options.intervalMs, options.idleMs ?? WATCH_IDLE_MS);
  /** How long the timer waits after the pass that just ran (set by it). */
  let rest = options.intervalMs;

  const pass = async () => {
    const at = now();
    const iso = at.toISOString();
    // One question first where the store can answer it (SQL stores: three index look-ups in
    // one statement), so an idle pass is one cheap round trip instead of three that fetch rows.
    const due = (await store.dueWork?.(iso)) ?? EVERYTHING_DUE;
    rest = restAfter(due, at.getTime());
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
        await fireDueNudges({ store, now: at, events, log });
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

  /**
   * After a pass with nothing to do, sleep until the soonest stored expiry or nudge (at most
   * `idleMs`): each pass of an idle server is a round trip through cold code (about 0.6 ms of
   * CPU on SQLite, 1.3 ms on PostgreSQL), so asking every `intervalMs` was most of its CPU.
   */
  const restAfter = (due: DueWork, nowMs: number): number => {
    // A store without dueWork answered EVERYTHING_DUE: busy.
    const busy = due.expiry || due.nudges || due.stalled;
    // Port requests kept by a checkpoint store of their own are not in `next`.
    if (busy || (options.runs && options.runsInStore !== true)) return options.intervalMs;
    if (due.next === null) return idleMs;
    const nextMs = Date.parse(due.next);
    // A time that does not read (an edited row) must not make a busy loop of NaN timeouts;
    // nor one that reads as past although, compared as text, the store did not call it due
    // (an edited row in another format, such as an offset '+02:00'): a 0 ms loop otherwise.
    if (!Number.isFinite(nextMs) || nextMs <= nowMs) return options.intervalMs;
    return Math.min(idleMs, Math.max(0, nextMs - nowMs));
  };

  const tick = () => {
    running ??= pass()
      .catch((error: unknown) => {
        rest = options.intervalMs;
        log(`countersign: store watch failed: ${String(error)}`);
      })
      .finally(() => {
        running = null;
      });
    return running;
  };

  // With no interval, nothing runs by itself: the caller (a test) ticks.
  let timer: NodeJS.Timeout | null = null;
  let wakeAt = Number.POSITIVE_INFINITY;
  let stopped = options.intervalMs <= 0;
  /** An event came while a pass ran: it may have read the store before the change. */
  let stirred = false;
  const wakeIn = (ms: number) => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    wakeAt = Date.now() + ms;
    timer = setTimeout(() => {
      timer = null;
      wakeAt = Number.POSITIVE_INFINITY;
      stirred = false;
      // finally: the next look must not hang on this pass ending well (tick does not reject,
      // but a chain that stops once is stopped for good).
      void tick().finally(() => wakeIn(stirred ? Math.min(rest, options.intervalMs) : rest));
    }, ms);
    timer.unref();
  };
  // Anything on the bus may have made something due sooner than the timer knows of: look
  // within `intervalMs`. Under load this keeps passes at `intervalMs`, as before.
  const unsubscribe = stopped
    ? () => undefined
    : events.subscribe(() => {
        if (timer === null) stirred = true;
        else if (wakeAt > Date.now() + options.intervalMs) wakeIn(options.intervalMs);
      });
  wakeIn(0);

  return {
    tick,
    async stop() {
      stopped = true;
      unsubscribe();
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
