import { LAST_INSTANT } from './instant.ts';

/**
 * What answering a port request does, in words for the person asked, when the port says
 * nothing better (`requestPort(id, { effect })`): which port, which workflow, which run.
 */
export function defaultPortEffect(port: string, workflow: string, run: string): string {
  return `Answering ${port} lets workflow ${workflow} (run ${run}) continue with your answer.`;
}

/** A port request's audit session and row session: the run's own, `wf.<run>`. */
export function runSessionOf(run: string): string {
  return `wf.${run}`;
}

/** Requests in checkpoints written before requests expired never expire: the row says so this way. */
export const NEVER_EXPIRES = LAST_INSTANT;
