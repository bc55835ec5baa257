import { outageDuration, type ReminderSchedule, trackOutage } from '../core/outage.ts';
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
 * Logs when `liveness`'s lock is lost, while it stays lost (throttled: the schedule of
 * src/core/outage.ts, since the lock is retried several times a second) and when it is held
 * again; the first hold is not a change worth a line. Returns the stop.
 */
export function watchLiveness(
  liveness: Liveness,
  log: (event: LivenessEvent) => void,
  schedule: ReminderSchedule = {},
): () => void {
  // The token the loss was told with; the reminders repeat it.
  let lostToken = '';
  const outage = trackOutage(({ ms, attempts, reason }) => {
    log({ event: 'liveness', held: false, still: true, token: lostToken, lostMs: ms, attempts, reason });
  }, schedule);

  const unsubscribe = liveness.onChange((change: LivenessChange) => {
    const reason = change.reason ?? 'no reason given';
    if (!change.held && change.retry) {
      outage.failed(reason);
      return;
    }
    if (!change.held) {
      if (!outage.begin(reason)) return;
      lostToken = change.token;
      log({ event: 'liveness', held: false, token: change.token, reason });
      return;
    }
    const ended = outage.end();
    if (ended === null) return;
    log({ event: 'liveness', held: true, token: change.token, lostMs: ended.ms, attempts: ended.attempts });
  });

  return () => {
    unsubscribe();
    outage.stop();
  };
}

/** `event` for a person reading the terminal; `who` is what the process is called there. */
export function livenessLogLine(event: Record<string, unknown>, who: 'worker' | 'server'): string {
  const lostMs = Number(event.lostMs);
  if (event.held === true)
    return `Holding the liveness lock again after ${outageDuration(lostMs)}: other hosts see this ${who} alive.`;
  if (event.still === true)
    return `Still not holding the liveness lock after ${outageDuration(lostMs)} (${event.attempts} failed attempts; the last: ${event.reason}). Meanwhile other hosts may take over the sessions this ${who} runs.`;
  return `Lost the liveness lock (${event.reason}); holding it again. Meanwhile other hosts may take over the sessions this ${who} runs.`;
}
