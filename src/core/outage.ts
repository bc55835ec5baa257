import { guardedLog } from './guarded-log.ts';

/**
 * How a long-running process logs something that stops working and is retried until it works
 * again (its liveness lock, src/liveness/liveness-log.ts; the worker's takeover watch,
 * src/cli/worker-takeover.ts): one line when it starts failing, reminders while it goes on,
 * one line when it works again.
 *
 * The first reminder comes FIRST_REMINDER_MS after the start; each later one when the outage
 * has lasted twice as long again (30 s, 1, 2, 4, 8 min), at most REMINDER_GAP_MAX_MS apart.
 * What fails is retried once a second or more often: one line per attempt would flood the log
 * while PostgreSQL is down, and a fixed 30 s would still write 120 lines an hour of an outage
 * that the first lines already told. Doubling keeps an hour's outage to about 15 lines, and
 * the cap means the log's newest word on it is never more than 5 minutes old.
 */
export const FIRST_REMINDER_MS = 30_000;
export const REMINDER_GAP_MAX_MS = 5 * 60_000;

export interface ReminderSchedule {
  /** Defaults FIRST_REMINDER_MS and REMINDER_GAP_MAX_MS. */
  firstReminderMs?: number;
  reminderGapMaxMs?: number;
}

/** An outage so far: how long since it began, the failed attempts since, the latest one's error. */
export interface OutageState {
  ms: number;
  attempts: number;
  reason: string;
}

export interface Outage {
  /**
   * It is failing (`reason`: why). True only when this starts an outage (log that); false
   * while one is going on, whatever the reason: a new error message is not a new outage.
   */
  begin(reason: string): boolean;
  /** An attempt to make it work failed, `reason` why: counted and kept. Ignored with no outage. */
  failed(reason: string): void;
  /** It works: how long the outage lasted and the attempts that failed, or null if there was none. */
  end(): { ms: number; attempts: number } | null;
  /** No outage, no reminder to come (the process is stopping). */
  stop(): void;
}

/**
 * Tracks one thing's outages for a log: `remind` is called on the schedule above while one
 * goes on, never otherwise (no timer runs between outages). Timers are unref'd.
 */
export function trackOutage(remind: (state: OutageState) => void, schedule: ReminderSchedule = {}): Outage {
  const firstMs = schedule.firstReminderMs ?? FIRST_REMINDER_MS;
  const gapMaxMs = schedule.reminderGapMaxMs ?? REMINDER_GAP_MAX_MS;
  // `remind` logs; one that throws must not end the reminders (the next is set after it).
  const tell = guardedLog(remind);
  let current: { at: number; attempts: number; reason: string } | null = null;
  let reminder: NodeJS.Timeout | undefined;

  const remindAfter = (ms: number) => {
    reminder = setTimeout(() => {
      if (current === null) return;
      const lasted = Date.now() - current.at;
      tell({ ms: lasted, attempts: current.attempts, reason: current.reason });
      remindAfter(Math.max(1, Math.min(lasted, gapMaxMs)));
    }, ms);
    reminder.unref();
  };

  return {
    begin(reason) {
      if (current !== null) return false;
      current = { at: Date.now(), attempts: 0, reason };
      remindAfter(firstMs);
      return true;
    },
    failed(reason) {
      if (current === null) return;
      current.attempts += 1;
      current.reason = reason;
    },
    end() {
      if (current === null) return null;
      const ended = { ms: Date.now() - current.at, attempts: current.attempts };
      current = null;
      clearTimeout(reminder);
      return ended;
    },
    stop() {
      current = null;
      clearTimeout(reminder);
    },
  };
}

/** "62 ms", "30.0 s", "13 min 0 s": how long an outage lasted, for a log line. */
export function outageDuration(ms: number): string {
  if (!Number.isFinite(ms)) return 'a while';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.floor((ms - minutes * 60_000) / 1000)} s`;
}

/**
 * Why an attempt failed, for a log line: the error's message; a refused connect to several
 * addresses (`localhost`: ::1 and 127.0.0.1) is an AggregateError without one, told by its code.
 */
export function failureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.message || (error as { code?: string }).code || error.name;
}
