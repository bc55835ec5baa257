/**
 * Where the work of continuing a session goes once a decision commits: executing the approved
 * call, calling the model, reaching the next wait. Any free worker process picks a job up.
 *
 * A job names only the session. Its handler is `agent.resume(session)`, which is idempotent by
 * construction: the session lease lets one run at a time, the execution ledger lets an approved
 * call run at most once (an interrupted non-idempotent call surfaces as `unknown`), and every
 * commit is fenced by the lease owner. A duplicate or retried job therefore costs one cheap
 * resume that finds nothing to do.
 */
export interface ContinuationJob {
  session: string;
  /** Why the session is to be continued ('decided', 'reconciled', …); for logs and metrics. */
  reason: string;
}

export interface ContinuationWorkOptions {
  /** Jobs this process runs at once (default 1). */
  concurrency?: number;
}

export interface ContinuationQueue {
  /** Hands a continuation to whichever worker is free. Resolves once the job is stored. */
  enqueue(job: ContinuationJob): Promise<void>;
  /**
   * Starts taking jobs. A handler that resolves completes its job; one that throws has it
   * retried later (by this or another worker). A worker that dies mid-job stops heart-beating
   * and its job is given to another worker.
   */
  work(handler: (job: ContinuationJob) => Promise<void>, options?: ContinuationWorkOptions): Promise<void>;
  /**
   * The sessions of jobs some worker holds right now, at most `limit`: what a worker checks
   * for holders that died, so it can take their jobs over without waiting for the queue's
   * own timeout (worker-takeover.ts). Optional: without it, takeover waits for the queue.
   */
  inHand?(limit: number): Promise<string[]>;
  /** Stops taking jobs, waits for jobs in hand to finish, and closes connections. */
  close(): Promise<void>;
}
