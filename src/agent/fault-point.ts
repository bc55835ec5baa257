/**
 * Crash points for the crash-recovery tests. A test process sets COUNTERSIGN_TEST_FAULT to a
 * point's name and is killed with SIGKILL exactly there — not a thrown error, which `finally`
 * blocks would see — so recovery is proven from a real hard stop, not from timing luck.
 * Read once at start-up: `process.env` is a slow accessor, and this sits on every decision.
 */
export type FaultPointName =
  | 'after-decision'
  | 'after-started'
  | 'after-tool'
  | 'after-result'
  | 'after-results-commit';

const armed = process.env.COUNTERSIGN_TEST_FAULT;

export function faultPoint(name: FaultPointName): void {
  if (armed === name) {
    process.kill(process.pid, 'SIGKILL');
  }
}
