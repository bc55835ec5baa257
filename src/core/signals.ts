import type { RequestKind } from './approval.ts';

/**
 * What this process did that a metrics scraper counts: decisions, expiries, outcomes left
 * unknown, failed model calls. In-process and synchronous, with no dependency: the server
 * entry (`countersign/server`) turns them into Prometheus metrics; importing `countersign`
 * loads nothing for them. Signals carry kinds and verdicts, never ids or argument values.
 */
export type CountersignSignal =
  | { kind: 'decided'; requestKind: RequestKind; verdict: string; waitedMs: number }
  | { kind: 'expired'; requestKind: RequestKind }
  | { kind: 'outcome-unknown' }
  | { kind: 'model-error' };

type SignalListener = (signal: CountersignSignal) => void;

const listeners = new Set<SignalListener>();

/** Listen to every signal of this process; returns the function that stops listening. */
export function onSignal(listener: SignalListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** A listener that throws never fails the step that signalled. */
export function signal(event: CountersignSignal): void {
  for (const listener of listeners) {
    try {
      listener(event);
    } catch {
      // Metrics miss one count; the committed step stands.
    }
  }
}

/** The signal of a decision just won: an expiry, or a verdict with the time it waited. */
export function signalDecision(
  request: { kind: RequestKind; createdAt: string } | null | undefined,
  decision: { verdict: string; at: string },
): void {
  const requestKind = request?.kind ?? 'tool-call';
  if (decision.verdict === 'expired') signal({ kind: 'expired', requestKind });
  else
    signal({
      kind: 'decided',
      requestKind,
      verdict: decision.verdict,
      waitedMs: request ? waitedMs(request.createdAt, decision.at) : 0,
    });
}

/** Milliseconds from a request's creation to its decision, never negative. */
export function waitedMs(createdAt: string, decidedAt: string): number {
  return Math.max(0, Date.parse(decidedAt) - Date.parse(createdAt));
}
