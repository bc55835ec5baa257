/**
 * Whether the process behind a lease owner is still alive, seen from any host that shares
 * the store: the port. A process holds a *token* for as long as it lives and writes it into
 * the lease owners it mints (lease-owner.ts); another process asks the backend whether anyone
 * still holds that token. The one rule that decides "is this holder dead" (dead-owners.ts)
 * asks this port only about holders it cannot judge itself (a process in another PID space).
 *
 * Backends, in sibling folders: `local/` (no tokens: a holder elsewhere is never judged
 * dead, its lease lapses after its term; what the SQLite and memory stores use) and
 * `postgres/` (a session advisory lock held on a connection of its own, which PostgreSQL
 * drops the moment the process's socket closes). Conformance cases: `conformance/`.
 */
export interface Liveness {
  /** `local` or `postgres`: for logs. */
  readonly kind: string;
  /**
   * The token to write into a lease owner minted now, or null while this process holds none
   * (still connecting, or its connection was lost and is being re-established): an owner
   * without a token is judged as owners written before tokens existed were.
   */
  token(): Promise<string | null>;
  /**
   * Of `tokens`, those that no live process holds at this moment. A token this backend cannot
   * read is never in the answer: a holder is judged dead on evidence, never on a guess.
   * Throws STORE_UNAVAILABLE when the backend cannot be asked.
   */
  released(tokens: readonly string[]): Promise<ReadonlySet<string>>;
  /**
   * Calls `listener` when this process starts or stops holding its token: while it holds none
   * other processes may judge the owners it minted dead. After a loss, also each time an
   * attempt to hold it again fails (`retry`): several a second while the server refuses, so
   * throttle before logging (liveness-log.ts). Returns the unsubscribe.
   */
  onChange(listener: (change: LivenessChange) => void): () => void;
  /**
   * The time leases run on, in epoch ms: one clock for every process sharing the store, so a
   * lease's term means the same to its holder and to whoever may take it over, whatever their
   * hosts' wall clocks say (PostgreSQL: the server's, postgres/server-clock.ts). The local
   * backend's is this host's wall clock: only this host shares its stores. Throws
   * STORE_UNAVAILABLE when the backend cannot be asked.
   */
  now(): Promise<number>;
  /** Lets the token go: owners minted with it are released from then on. */
  close(): Promise<void>;
}

export interface LivenessChange {
  /** Whether this process holds its token from now on. */
  held: boolean;
  /** The token held or lost. */
  token: string;
  /** Why it was lost (the connection's error), or, with `retry`, why that attempt failed. */
  reason?: string;
  /**
   * true on a failed attempt to hold the token again after losing it: not a change (it was
   * not held, and still is not). Never before the token was first held, nor while it is.
   */
  retry?: true;
}
