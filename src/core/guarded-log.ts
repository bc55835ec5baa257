/**
 * `log`, unable to throw. The long-running loops (the store watcher, the webhook outbox, the
 * audit follower, the worker's sweeps, outage reminders) log from their catch blocks and
 * schedule their next pass after them; a logger that throws there (a closed stream, a broken
 * transport) would end the loop for good, or crash the process with an unhandled rejection.
 * The line it could not write is dropped: the logger was the place to say it.
 */
export function guardedLog<A extends unknown[]>(log: (...args: A) => void): (...args: A) => void {
  return (...args) => {
    try {
      log(...args);
    } catch {
      // See above: nothing to do but carry on.
    }
  };
}
