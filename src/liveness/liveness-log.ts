import type { Liveness, LivenessChange } from './liveness.ts';

/**
 * What a long-running process (`countersign serve`, `countersign worker`) logs about its
 * liveness lock: `worker --json` prints these as they are, both print `livenessLogLine`.
 * - lost: the lock is gone (`reason`: the connection's error); others may now judge this
 *   process dead and take its sessions over.
 * - `still`: it is still not held, `lostMs` after the loss, after `attempts` failed attempts to
 *   hold it again (`reason`: the latest one's error).
 * - `held`: held again, `lostMs` after the loss.
 */
export type LivenessEvent =
  | { event: 'liveness'; held: false; token: string; reason: string }
  | {
      event: 'liveness';
      held: false;
      still: true;
      token: string;
      lostMs: number;
      attempts: number;
      reason: string;
    }
  | { event: 'liveness'; held: true; token: string; lostMs: number; attempts: number };

/**
 * The first "still not held" line comes this long after the loss; each later one when the
 * loss has lasted twice as long again (30 s, 1, 2, 4, 8 min), at most REMINDER_GAP_MAX_MS
 * apart. The lock is retried several times a second: one line per attempt would flood the log
 * while PostgreSQL is down, and a fixed 30 s would still write 120 lines an hour of an outage
 * that the first lines already told. Doubling keeps an hour's outage to about 15 lines, and
 * the cap means the log's newest word on it is never more than 5 minutes old.
 */
export const FIRST_REMINDER_MS = 30_000;
export const REMINDER_GAP_MAX_MS = 5 * 60_000;

export interface WatchOptions {
  /** Defaults FIRST_REMINDER_MS and REMINDER_GAP_MAX_MS. */
  firstReminderMs?: number;
  reminderGapMaxMs?: number;
}

/**
 * Logs when `liveness`'s lock is lost, while it stays lost (throttled, see FIRST_REMINDER_MS)
 * and when it is held again; the first hold is not a change worth a line. Returns the stop.
 */
export function watchLiveness(
  liveness: Liveness,
  log: (event: LivenessEvent) => void,
  options: WatchOptions = {},
): () => void {
  const firstMs = options.firstReminderMs ?? FIRST_REMINDER_MS;
  const gapMaxMs = options.reminderGapMaxMs ?? REMINDER_GAP_MAX_MS;
  let lost: { at: number; token: string; attempts: number; reason: string } | null = null;
  let reminder: NodeJS.Timeout | undefined;

  const remindAfter = (ms: number) => {
    reminder = setTimeout(() => {
      if (lost === null) return;
      const lostMs = Date.now() - lost.at;
      const { token, attempts, reason } = lost;
      log({ event: 'liveness', held: false, still: true, token, lostMs, attempts, reason });
      remindAfter(Math.max(1, Math.min(lostMs, gapMaxMs)));
    }, ms);
    reminder.unref();
  };

  const unsubscribe = liveness.onChange((change: LivenessChange) => {
    const reason = change.reason ?? 'no reason given';
    if (!change.held && change.retry) {
      if (lost === null) return;
      lost.attempts += 1;
      lost.reason = reason;
      return;
    }
    if (!change.held) {
      if (lost !== null) return;
      lost = { at: Date.now(), token: change.token, attempts: 0, reason };
      log({ event: 'liveness', held: false, token: change.token, reason });
      remindAfter(firstMs);
      return;
    }
    if (lost === null) return;
    const { at, attempts } = lost;
    lost = null;
    clearTimeout(reminder);
    log({ event: 'liveness', held: true, token: change.token, lostMs: Date.now() - at, attempts });
  });

  return () => {
    unsubscribe();
    clearTimeout(reminder);
    lost = null;
  };
}

/** `event` for a person reading the terminal; `who` is what the process is called there. */
export function livenessLogLine(event: Record<string, unknown>, who: 'worker' | 'server'): string {
  const lostMs = Number(event.lostMs);
  if (event.held === true)
    return `Holding the liveness lock again after ${duration(lostMs)}: other hosts see this ${who} alive.`;
  if (event.still === true)
    return `Still not holding the liveness lock after ${duration(lostMs)} (${event.attempts} failed attempts; the last: ${event.reason}). Meanwhile other hosts may take over the sessions this ${who} runs.`;
  return `Lost the liveness lock (${event.reason}); holding it again. Meanwhile other hosts may take over the sessions this ${who} runs.`;
}

function duration(ms: number): string {
  if (!Number.isFinite(ms)) return 'a while';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.floor((ms - minutes * 60_000) / 1000)} s`;
}
