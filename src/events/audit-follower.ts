import type { AuditEntry } from '../core/audit.ts';
import { guardedLog } from '../core/guarded-log.ts';
import type { AuditLog } from '../store/ports/audit-log.ts';
import type { EventBus } from './event-bus.ts';

export interface AuditFollowerOptions {
  log: Pick<AuditLog, 'listAudit'>;
  /** The seq after which to start reading: a stored cursor, or the head for "no history". Asked once. */
  from: () => Promise<number>;
  /**
   * Handles a page of entries, in seq order. The cursor moves past them only once this
   * resolves; if it throws, the same entries are read again on the next pass (at least once).
   */
  deliver: (entries: AuditEntry[]) => Promise<void> | void;
  /** Any event on this bus means "something was committed": read at once instead of at the next poll. */
  wake?: EventBus;
  /** Read at least this often (default 1000 ms): the bus is a hint, the log the record. 0: only when woken. */
  pollMs?: number;
  /**
   * Wake-ups within this many ms are answered by one read (default 5): at a thousand
   * decisions a second the bus says so several times per decision, and one read picks up
   * them all. Live streams gather frames for 20 ms anyway.
   */
  wakeDelayMs?: number;
  /** Entries per read (default 500). */
  pageSize?: number;
  /** A failed read or delivery (logged once per distinct message by the caller, say). */
  onError?: (error: unknown) => void;
}

export interface AuditFollower {
  /** The seq of the last entry delivered; null before the first pass has found where to start. */
  readonly position: number | null;
  /** Read soon: a pass starts now, or right after the one under way. */
  poke(): void;
  /**
   * Resolves once every entry committed before the call has been delivered (or a pass failed;
   * see onError). Starts the follower if it has not started.
   */
  catchUp(): Promise<void>;
  /** Stops polling and waking; resolves once a pass under way has ended. */
  stop(): Promise<void>;
}

const DEFAULT_POLL_MS = 1000;
const DEFAULT_PAGE = 500;

/**
 * Tails the audit log by cursor: `listAudit({ afterSeq: position, limit })` until a short
 * page, on every poll and whenever the bus says something happened. Passes never overlap;
 * pokes during a pass are folded into one more pass after it. Seq order is commit order
 * (see AuditLog), so a cursor never skips an entry that commits late.
 */
export function createAuditFollower(options: AuditFollowerOptions): AuditFollower {
  const pageSize = options.pageSize ?? DEFAULT_PAGE;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  let position: number | null = null;
  let stopped = false;
  let current: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  // A pass must not reject: the pass queued behind it (`request`) would never start.
  const onError = guardedLog(options.onError ?? (() => undefined));

  async function pass(): Promise<void> {
    if (stopped) return;
    try {
      position ??= await options.from();
      for (;;) {
        const page = await options.log.listAudit({ afterSeq: position, limit: pageSize });
        if (page.length === 0 || stopped) return;
        await options.deliver(page);
        position = page.at(-1)!.seq;
        if (page.length < pageSize) return;
      }
    } catch (error) {
      onError(error);
    }
  }

  function start(): Promise<void> {
    current = pass().finally(() => {
      current = null;
    });
    return current;
  }

  /** One pass that begins after this call: the running one may have read before the caller's commit. */
  function request(): Promise<void> {
    if (queued !== null) return queued;
    if (current === null) return start();
    queued = current.then(() => {
      queued = null;
      return start();
    });
    return queued;
  }

  const wakeDelayMs = options.wakeDelayMs ?? 5;
  let wakeTimer: NodeJS.Timeout | null = null;
  const woken = () => {
    if (wakeTimer !== null || stopped) return;
    wakeTimer = setTimeout(() => {
      wakeTimer = null;
      void request();
    }, wakeDelayMs);
  };
  const unsubscribe = options.wake?.subscribe(woken);
  const timer = pollMs > 0 ? setInterval(() => void request(), pollMs) : null;
  // A follower must not keep a finished process alive.
  timer?.unref();

  return {
    get position() {
      return position;
    },
    poke() {
      void request();
    },
    catchUp: request,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      if (wakeTimer) clearTimeout(wakeTimer);
      unsubscribe?.();
      await (queued ?? current);
    },
  };
}
