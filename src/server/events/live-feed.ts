import { type AuditFollower, createAuditFollower } from '../../events/audit-follower.ts';
import type { CountersignEvent, EventBus } from '../../events/event-bus.ts';
import { type LoggedEvent, loggedEventsOf } from '../../events/from-audit.ts';
import type { AuditLog } from '../../store/ports/audit-log.ts';

/**
 * How many audit entries a reconnecting client is replayed at most. Beyond that it is sent a
 * `reload` event: re-reading the store is cheaper than streaming a long absence.
 */
export const REPLAY_LIMIT = 1000;

/**
 * Wake-ups (and turn ends) within this many ms share one read of the log. Streams gather
 * frames for 20 ms anyway; at 1,800 decisions a second with 20 inboxes open, answering each
 * wake-up within 5 ms kept the follower reading back to back (+18% server CPU per decision),
 * this keeps it to a few dozen reads a second.
 */
const FOLD_MS = 20;

export type LiveListener = (logged: LoggedEvent) => void;

/** What a stream that reconnects after `afterSeq` gets first (see `replay`). */
export type Replay =
  /** The events after the cursor, in order; `upTo` is the seq of the last entry read. */
  | { kind: 'events'; events: LoggedEvent[]; upTo: number }
  /** Too far behind (more than REPLAY_LIMIT entries), or a cursor this log never reached. */
  | { kind: 'reload'; head: number };

/**
 * The server's live events, from the audit log: one follower tails the log for every open
 * stream (inbox, chat, /v1/events), so what another process commits — the console chat,
 * `countersign approve`, another instance — streams like what this one does. `turn.finished`
 * is the one event that is not in the log (a turn's end is not audited); it comes from the
 * bus and is passed on after the follower has caught up, so it never overtakes the entries
 * committed before it. The follower starts with the first stream and reads from the head.
 */
export interface LiveFeed {
  /** Starts the follower if needed; resolves once it knows its position. */
  start(): Promise<void>;
  /** The seq of the last entry passed to listeners (0 for an empty log); null before start. */
  readonly position: number | null;
  /** Live events from now on, each with its entry's seq (`turn.finished`: the position then). */
  subscribe(listener: LiveListener): () => void;
  /** Listeners subscribed now (one per open stream). */
  readonly listeners: number;
  /** The events after `afterSeq`, as stored, within REPLAY_LIMIT entries. */
  replay(afterSeq: number): Promise<Replay>;
  /** Every entry committed before the call has been passed on (tests, `server.watch()`). */
  catchUp(): Promise<void>;
  close(): Promise<void>;
}

export function createLiveFeed(options: {
  log: Pick<AuditLog, 'listAudit' | 'lastAuditSeq'>;
  bus: EventBus;
  pollMs?: number;
  onError?: (error: unknown) => void;
}): LiveFeed {
  const { log, bus } = options;
  const listeners = new Set<LiveListener>();
  let follower: AuditFollower | null = null;
  let starting: Promise<void> | null = null;
  let position: number | null = null;
  let closed = false;
  let unsubscribeBus: (() => void) | null = null;
  let stopTurns: (() => void) | null = null;

  const fanOut = (logged: LoggedEvent, to: Iterable<LiveListener> = [...listeners]) => {
    for (const listener of to) {
      if (!listeners.has(listener)) continue;
      try {
        listener(logged);
      } catch {
        // One broken stream must not stop the others.
      }
    }
  };

  function start(): Promise<void> {
    if (starting === null) {
      starting = begin();
      // A store that was down at the first stream: the next stream tries again.
      starting.catch(() => {
        starting = null;
      });
    }
    return starting;
  }

  async function begin(): Promise<void> {
    const head = await log.lastAuditSeq();
    if (closed) return;
    position = head;
    follower = createAuditFollower({
      log,
      from: async () => head,
      deliver: (entries) => {
        // Fanned out and moved past in one turn of the event loop, so a stream that
        // subscribes and reads `position` in between sees each event exactly once.
        for (const logged of loggedEventsOf(entries)) fanOut(logged);
        position = entries.at(-1)!.seq;
      },
      wake: bus,
      wakeDelayMs: FOLD_MS,
      ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
    // Turn ends wait for one read that began after them (so they never overtake the entries
    // committed before them); those within FOLD_MS share it.
    // Each goes to the streams open when it happened: a stream opened since is not told of it.
    let turns: Array<{ event: CountersignEvent; to: LiveListener[] }> = [];
    let turnTimer: NodeJS.Timeout | null = null;
    const flushTurns = () => {
      turnTimer = null;
      const batch = turns;
      turns = [];
      const after = follower?.catchUp() ?? Promise.resolve();
      void after.then(() => {
        for (const { event, to } of batch) fanOut({ seq: position ?? 0, event }, to);
      });
    };
    unsubscribeBus = bus.subscribe((event: CountersignEvent) => {
      if (event.type !== 'turn.finished') return;
      turns.push({ event, to: [...listeners] });
      turnTimer ??= setTimeout(flushTurns, FOLD_MS);
    });
    stopTurns = () => {
      if (turnTimer !== null) clearTimeout(turnTimer);
    };
  }

  return {
    start,
    get position() {
      return position;
    },
    get listeners() {
      return listeners.size;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async replay(afterSeq) {
      const entries = await log.listAudit({ afterSeq, limit: REPLAY_LIMIT + 1 });
      if (entries.length > REPLAY_LIMIT) return { kind: 'reload', head: await log.lastAuditSeq() };
      if (entries.length === 0) {
        const head = await log.lastAuditSeq();
        // A cursor past the head is from another log (a reset or restored store): start over.
        if (afterSeq > head) return { kind: 'reload', head };
        return { kind: 'events', events: [], upTo: afterSeq };
      }
      return { kind: 'events', events: loggedEventsOf(entries), upTo: entries.at(-1)!.seq };
    },
    async catchUp() {
      if (starting === null) return;
      await starting;
      await follower?.catchUp();
    },
    async close() {
      closed = true;
      listeners.clear();
      unsubscribeBus?.();
      stopTurns?.();
      await follower?.stop();
    },
  };
}
