/**
 * Crash points for the crash-recovery tests. A test process sets COUNTERSIGN_TEST_FAULT to a
 * point's name and is killed with SIGKILL exactly there — not a thrown error, which `finally`
 * blocks would see — so recovery is proven from a real hard stop, not from timing luck.
 * With the variable unset (always, outside tests) this is one property read.
 */
export type FaultPointName =
  | 'after-decision'
  | 'after-started'
  | 'after-tool'
  | 'after-result'
  | 'after-results-commit';

export function faultPoint(name: FaultPointName): void {
  if (process.env.COUNTERSIGN_TEST_FAULT === name) {
    process.kill(process.pid, 'SIGKILL');
  }
}
