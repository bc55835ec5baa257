import { outageDuration } from '../core/outage.ts';
import { livenessLogLine } from '../liveness/liveness-log.ts';

/** One worker event for a person reading the terminal; `--json` prints the event itself. */
export function workerLogLine(line: Record<string, unknown>): string {
  const list = (value: unknown) => (Array.isArray(value) ? value.join(', ') : String(value));
  switch (line.event) {
    case 'ready':
      return `Worker ${line.pid} ready: continuing decided sessions of ${list(line.agents)}, ${line.concurrency} at a time. Stop it with Ctrl+C or SIGTERM.`;
    case 'continued':
      return `Continued session ${line.session}: ${line.status} (${line.ms} ms).`;
    case 'retry':
      return `Session ${line.session} will be retried: ${line.code} ${line.message}`;
    case 'skipped':
      return `Skipped session ${line.session}: ${line.reason}.`;
    case 'stalled':
      return `Queued stalled sessions: ${list(line.sessions)}.`;
    case 'taken-over':
      return `Took over sessions whose holder died: ${list(line.sessions)} (from ${list(line.holders)}).`;
    case 'takeover-failed':
      if (line.still === true)
        return `Still cannot look for sessions of dead workers after ${outageDuration(Number(line.failedMs))} (${line.attempts} failed attempts; the last: ${line.message}). Meanwhile this worker takes over no session whose worker died; it keeps trying.`;
      return `Cannot look for sessions of dead workers (${line.message}). Until it can, this worker takes over no session whose worker died; it keeps trying and will say when it can again.`;
    case 'takeover-recovered':
      return `Looking for sessions of dead workers again after ${outageDuration(Number(line.failedMs))} (${line.attempts} failed attempts): this worker takes them over again.`;
    case 'liveness':
      return livenessLogLine(line, 'worker');
    case 'sweep-failed':
      if (line.still === true)
        return `The sweep for stalled sessions still fails after ${outageDuration(Number(line.failedMs))} (${line.attempts} failed sweeps; the last: ${line.message}) Meanwhile no decided session nobody continues is queued; it keeps trying every ${outageDuration(Number(line.intervalMs))}.`;
      return `The sweep for stalled sessions failed: ${line.message} It runs again in ${outageDuration(Number(line.intervalMs))} and will say when it works again; check the store if this repeats.`;
    case 'sweep-recovered':
      return `The sweep for stalled sessions works again after ${outageDuration(Number(line.failedMs))} (${line.attempts} failed sweeps).`;
    case 'stopping':
      return `Stopping on ${line.signal}: finishing the sessions in hand.`;
    default:
      return JSON.stringify(line);
  }
}
