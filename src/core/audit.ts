import type { RequestNudges, Verdict } from './approval.ts';
import type { AuditGap } from './audit-coverage.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import type { ExecutionStatus } from './execution.ts';
import type { JsonObject, JsonValue } from './json.ts';
import { storedText } from './storable-text.ts';

/*
 * What each kind of audit entry records, by kind: the one list of kinds countersign writes.
 * An emitter builds an `AuditEvent`, so a misspelt kind or a field its kind does not have is
 * a compile error. Entries read back from a store are `AuditEntry`: they may come from an
 * older (or newer) version, so their kind is any string and their data is as stored.
 */

/** A tool call's arguments as recorded: canonical JSON and its SHA-256. */
export type RecordedCall = { tool: string; args: string; argsHash: string };

/** A call as a person edited it: canonical JSON and hash, its preview, and what changed. */
export type EditedCall = {
  args: string;
  argsHash: string;
  effect: string;
  diff: Array<{ field: string; from?: JsonValue; to?: JsonValue }>;
};

/** What a workflow port request's `request.*` entries name: the same family as a tool call's. */
export type PortRequestEntry = { kind: 'port'; run: string; workflow: string; port: string };

/** What every nudge entry says: which request, when it was due, when it expires, and who may decide it. */
export type NudgeEntry = {
  kind: 'tool-call' | 'port';
  tool: string;
  dueAt: string;
  expiresAt: string;
  requiredRole: string | null;
  customer: string | null;
};

export type AuditEventMap = {
  /**
   * Raised by a run; or re-raised in this store by an import (`imported: true`); or a port
   * request raised by a workflow checkpoint (`kind: 'port'`, its data as canonical JSON in `args`).
   */
  'request.raised':
    | (RecordedCall & {
        toolIdentity: string;
        effect: string;
        expiresAt: string;
        /**
         * With the fields above, what a live view of the request needs (src/events/from-audit.ts).
         * Entries written before these existed lack them; readers fall back to the entry's time,
         * an unknown raiser and `pending`.
         */
        createdAt: string;
        raisedBy: string | null;
        /** `approved` when a standing or auto rule approved it on the spot: nobody is asked. */
        status: 'pending' | 'approved';
        /** The row's parties and place, as a live card shows them (added with the one request model). */
        agent: string;
        callId: string;
        customer: string | null;
        requiredRole: string | null;
        run: string | null;
        /** The preview's hash, the editable fields and the quorum size (added with edit and quorum). */
        effectHash?: string | null;
        editable?: string[];
        approvalsNeeded?: number;
        /** Its reminder, escalation and warning times, when its tool sets any (a live card shows them). */
        nudges?: RequestNudges;
      })
    | (RecordedCall & { effect: string; expiresAt: string; imported: true; reopened: boolean })
    | (PortRequestEntry & {
        version: number;
        args: string;
        argsHash: string;
        effect: string;
        askedBy: string | null;
        expiresAt: string | null;
        /** Added with live port cards; entries written before lack them. */
        createdAt?: string;
        raisedBy?: string | null;
        customer?: string | null;
        requiredRole?: string | null;
        nudges?: RequestNudges;
      });
  /** `remember` and `rule` are there when the approval created a standing rule. */
  'request.decided':
    | (RecordedCall & {
        /** A person's verdict: approved or rejected (expiry writes request.expired). */
        verdict: Verdict;
        reason: string | null;
        remember?: 'tool' | 'tool-with-args' | null;
        rule?: string;
        /**
         * Approved with changes: the call that runs (canonical JSON, hash, preview) beside the
         * model's proposal in `args`, and what changed. Absent when approved as proposed.
         */
        edited?: EditedCall;
        /** The quorum it completed: every approver, oldest first (absent for one approver). */
        approvals?: Array<{ by: string; at: string; reason: string | null }>;
      })
    /** A person's answer to a port request: canonical JSON of the answer, and its SHA-256. */
    | (PortRequestEntry & { verdict: 'answered'; response: string; responseHash: string });
  /**
   * One approval of a quorum that is not the last, or an edit that re-routes the request:
   * who, how many so far of how many, the role now required, and the edited call if any.
   */
  'request.approval-added': RecordedCall & {
    reason: string | null;
    approvals: number;
    approvalsNeeded: number;
    requiredRole: string | null;
    /** The edit re-routed it to a role (or more approvers) the editor's approval did not cover. */
    rerouted: boolean;
    edited?: EditedCall;
  };
  /** `rule` is the decider recorded (`rule:<id>` or the auto-approval rule's name). */
  'request.auto-approved': RecordedCall & { rule: string; kind: 'standing-rule' | 'auto-rule' };
  'request.expired': { expiresAt: string } | (PortRequestEntry & { expiresAt: string });
  'request.moved-on': { reason: string };
  /**
   * The nudges of a waiting request (both kinds; `kind: 'port'` names a port request), each
   * written once by whichever instance advanced the row's next nudge time (actor `countersign`):
   * a reminder to whoever may decide it, an escalation to a role (who may now decide it too),
   * a warning that it expires at `expiresAt`. `dueAt` is when it was scheduled to fire.
   */
  'request.reminder': NudgeEntry;
  'request.escalated': NudgeEntry & { escalatedTo: string };
  'request.expiring': NudgeEntry;
  /** A person took the request to work on it until `until`; or gave it back (`request.released`). */
  'request.claimed': { until: string; previous: string | null };
  'request.released': { reason: 'released' };
  'execution.started': { tool: string; argsHash: string; idempotencyKey: string };
  'execution.finished': { status: 'succeeded' | 'failed'; resultHash: string };
  'execution.retried': { tool: string; idempotencyKey: string; previousStatus: ExecutionStatus };
  'execution.reconciled': { outcome: 'succeeded' | 'failed'; result: JsonValue };
  /** Fields sent with a decision that a decision does not carry (canonical JSON in `sent`). */
  'tamper.ignored': { fields: string[]; sent: string; storedArgsHash: string };
  /** A stored request whose arguments no longer match; or a stored call refused before it ran. */
  'tamper.refused':
    | { problem: string; argsHash: string }
    | { tool: string; callId: string; problem: string }
    /** A port request refused before it was answered or applied: its binding broke. */
    | { problem: string; argsHash: string; kind: 'port'; run: string; port: string };
  /** A session export imported; or an AI SDK conversation (`source: 'ai-sdk'`). */
  'session.imported':
    | {
        messages: number;
        approvals: number;
        signed: boolean;
        keyId: string | null;
        requests: string[];
        keptDecisions: string[];
        reopened: string[];
        keptLedger: string[];
        refusedLedger: string[];
      }
    | { source: 'ai-sdk'; messages: number; closed: string[] };
  'rule.revoked': { rule: string; tool: string };
  /** A `logged: true` tool that ran without approval. */
  'call.logged': { tool: string; args: string; resultHash: string };
  /** Written for port requests before they were rows (read and verified still, never written). */
  'workflow.requested': {
    run: string;
    workflow: string;
    version: number;
    port: string;
    /** Canonical JSON of the request data, and its SHA-256. */
    request: string;
    requestHash: string;
    askedBy: string | null;
    expiresAt: string | null;
  };
  'workflow.answered': {
    run: string;
    workflow: string;
    port: string;
    /** Canonical JSON of the answer, and its SHA-256. */
    response: string;
    responseHash: string;
  };
  'workflow.expired': { run: string; workflow: string; port: string; expiresAt: string };
  /**
   * A customer's data was erased (src/erasure/): who (the actor), when, which principal, and
   * how much of each kind; no customer data. `keyForgotten`: the principal's data key is
   * destroyed too (encryption on), right after this entry commits with the rows: keys go last
   * (src/erasure/erase-principal.ts), so a rerun of an erasure stopped between the two writes
   * a second entry that says only that.
   */
  'principal.erased': {
    principal: string;
    sessions: number;
    messages: number;
    requests: number;
    executions: number;
    runs: number;
    checkpoints: number;
    auditEntries: number;
    deliveries: number;
    /** Application-state keys the app named as the customer's (`customerState`), overwritten. */
    stateKeys: number;
    keyForgotten: boolean;
  };
  /** Retention removed what was past its period (`countersign purge`, or serve's schedule). */
  'retention.purged': { sessions: number; runs: number; requests: number; auditEntries: number };
  /**
   * `countersign keys rotate` re-wrapped data keys under the newest key-encryption key: who
   * (the actor), when, how many of how many, under which KEK and from which. Key ids only,
   * never key material.
   */
  'keys.rotated': { kekId: string; rewrapped: number; total: number; from: string[] };
};

export type AuditKind = keyof AuditEventMap;

/** Every kind this version writes, in the map's order (for schemas and documentation). */
export const AUDIT_KINDS = [
  'request.raised',
  'request.decided',
  'request.auto-approved',
  'request.approval-added',
  'request.expired',
  'request.moved-on',
  'request.reminder',
  'request.escalated',
  'request.expiring',
  'request.claimed',
  'request.released',
  'execution.started',
  'execution.finished',
  'execution.retried',
  'execution.reconciled',
  'tamper.ignored',
  'tamper.refused',
  'session.imported',
  'rule.revoked',
  'call.logged',
  'workflow.requested',
  'workflow.answered',
  'workflow.expired',
  'principal.erased',
  'retention.purged',
  'keys.rotated',
] as const satisfies readonly AuditKind[];

// Compile-time: AUDIT_KINDS lists every kind of the map, and every data shape is JSON.
type Missing = Exclude<AuditKind, (typeof AUDIT_KINDS)[number]>;
const allKindsListed: [Missing] extends [never] ? true : Missing = true;
void allKindsListed;
type NotJson = { [K in AuditKind]: AuditEventMap[K] extends JsonObject ? never : K }[AuditKind];
const allDataJson: [NotJson] extends [never] ? true : NotJson = true;
void allDataJson;

/**
 * An entry to write, as every store write takes them (`AuditEvent[]`): the kind picks the
 * shape of `data`. `AuditEvent<'request.decided'>` is one kind's event.
 */
export type AuditEvent<K extends AuditKind = AuditKind> = {
  [Kind in K]: {
    kind: Kind;
    session: string | null;
    requestId: string | null;
    actor: string;
    data: AuditEventMap[Kind];
  };
}[K];

/**
 * An entry as a store reads it back. Rows written by other versions may carry kinds and
 * data shapes this one does not know, and the chain must still verify them, so the kind is
 * any string (compare it with an `AuditKind`; `AUDIT_KINDS` lists them) and the data is
 * the JSON object stored.
 */
export interface AuditEntry {
  seq: number;
  at: string;
  kind: string;
  session: string | null;
  requestId: string | null;
  actor: string;
  /** `{}` once the entry's data was erased (`erasedAt`). */
  data: JsonObject;
  /**
   * SHA-256 of the canonical JSON of `data`, which the link covers instead of the data
   * itself (entry hashing version 2), so the chain verifies after the data is erased.
   * Absent on entries written before 0.2 (version 1: the link covers the data).
   */
  dataHash?: string;
  /**
   * When the data was erased (a customer's erasure, or audit retention); absent while it is
   * readable. `AUDIT_KEY_DESTROYED` when its data key was destroyed (encryption on) but the
   * row itself was not rewritten, so the time is not recorded on it.
   */
  erasedAt?: string;
  prevHash: string;
  hash: string;
}

export const AUDIT_GENESIS = '0'.repeat(64);

/** `erasedAt` of an entry whose data key is gone but whose row was never rewritten. */
export const AUDIT_KEY_DESTROYED = 'key-destroyed';

type Linked = Omit<AuditEntry, 'hash' | 'prevHash' | 'erasedAt'>;

/** What a version-2 link covers in place of the data: its digest. */
export function auditDataDigest(data: JsonObject): string {
  return sha256Hex(canonicalJson(data));
}

/**
 * The chain link: any edit, deletion or reordering of an entry breaks every later hash.
 * With `dataHash` (version 2) the link covers the data's digest, and the digest the data;
 * without it (entries written before, version 1) the link covers the data itself.
 */
export function auditHash(prevHash: string, entry: Linked): string {
  return sha256Hex(`${prevHash}\n${auditLinkText(entry)}`);
}

/** What a link hashes after the previous hash and a newline. */
function auditLinkText(entry: Linked): string {
  const fields = {
    seq: entry.seq,
    at: storedText(entry.at),
    kind: storedText(entry.kind),
    session: storedText(entry.session),
    requestId: storedText(entry.requestId),
    actor: storedText(entry.actor),
  };
  return canonicalJson(
    entry.dataHash === undefined ? { ...fields, data: entry.data } : { ...fields, dataHash: entry.dataHash },
  );
}

/**
 * A version-2 link with its seq left open, for a store that learns the seq only where it
 * writes (PostgreSQL numbers and hashes a batch under the head's lock, in one statement):
 * `auditHash(prev, { ...entry, seq, dataHash })` is the SHA-256 of
 * `${prev}\n${before}${seq}${after}`, so the canonical JSON is still written here, once.
 */
export function auditLinkParts(entry: Omit<Linked, 'dataHash' | 'seq'>): {
  dataHash: string;
  before: string;
  after: string;
} {
  const dataHash = auditDataDigest(entry.data);
  const text = auditLinkText({ ...entry, seq: 0, dataHash });
  // Keys are sorted and a quote inside a string value is escaped, so `"seq":0` occurs once:
  // at the seq key.
  const at = text.indexOf(SEQ_ZERO);
  if (at < 0 || text.indexOf(SEQ_ZERO, at + 1) >= 0) throw new Error('audit link: no single seq key');
  const cut = at + SEQ_ZERO.length - 1;
  return { dataHash, before: text.slice(0, cut), after: text.slice(cut + 1) };
}

const SEQ_ZERO = '"seq":0';

/** The digest and link a store writes for a new entry (always version 2). */
export function sealAuditEntry(
  prevHash: string,
  entry: Omit<Linked, 'dataHash'>,
): { dataHash: string; hash: string } {
  const dataHash = auditDataDigest(entry.data);
  return { dataHash, hash: auditHash(prevHash, { ...entry, dataHash }) };
}

export type AuditVerification =
  /**
   * `head` is the last entry's seq and hash. Record it somewhere the database's owners cannot
   * write: a chain that was cut short still verifies, but no longer reaches a recorded head.
   * `erased`: how many entries' data was erased (their links still verified).
   */
  | { ok: true; entries: number; erased: number; head: { seq: number; hash: string } | null }
  | { ok: false; entries: number; brokenAt: number; problem: string }
  /**
   * The chain holds, but stored requests or ledger rows lack the entries their state implies:
   * entries were removed from the end, or the table was emptied.
   */
  | { ok: false; entries: number; brokenAt: null; problem: string; missing: AuditGap[] };

/**
 * Whether one entry's own link holds. An erased version-2 entry is checked without its data
 * (the digest stands in for it); an erased version-1 entry cannot be recomputed, so only its
 * place in the chain is checked: the next entry's link still covers its hash.
 */
function linkHolds(prev: string, entry: AuditEntry): boolean {
  if (entry.erasedAt !== undefined) {
    return entry.dataHash === undefined || auditHash(prev, entry) === entry.hash;
  }
  if (entry.dataHash !== undefined && auditDataDigest(entry.data) !== entry.dataHash) return false;
  return auditHash(prev, entry) === entry.hash;
}

/** Walks the chain in seq order; reports the first entry whose link does not hold. */
export function verifyAuditChain(entries: readonly AuditEntry[]): AuditVerification {
  let prev = AUDIT_GENESIS;
  let expectedSeq = 1;
  let erased = 0;
  for (const entry of entries) {
    if (entry.seq !== expectedSeq) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `expected entry ${expectedSeq} but found ${entry.seq}: an entry was deleted or reordered`,
      };
    }
    if (entry.prevHash !== prev) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `entry ${entry.seq} does not link to the entry before it`,
      };
    }
    if (!linkHolds(prev, entry)) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `entry ${entry.seq} was edited after it was written`,
      };
    }
    if (entry.erasedAt !== undefined) erased += 1;
    prev = entry.hash;
    expectedSeq += 1;
  }
  const unaccounted = unaccountedErasure(entries);
  if (unaccounted !== null) return { ok: false, entries: entries.length, ...unaccounted };
  const last = entries.at(-1);
  return {
    ok: true,
    entries: entries.length,
    erased,
    head: last ? { seq: last.seq, hash: last.hash } : null,
  };
}

/** Kinds whose `auditEntries` says how many entries the write erased (at its own `at`). */
const ERASING_KINDS: ReadonlySet<string> = new Set(['principal.erased', 'retention.purged']);

/**
 * Erasing data in place keeps the link valid, so the link alone would not show an entry
 * marked erased by someone else. Every erasure and purge writes, in the same transaction and
 * at the same instant as the `erasedAt` it sets, an entry counting what it erased; those
 * entries are links of the chain and never erased themselves. So the entries erased at one
 * instant may not outnumber what the erasing entries of that instant count. Entries whose
 * data key was destroyed without the row being rewritten (`AUDIT_KEY_DESTROYED`) are not
 * marked by any write and are not counted.
 */
function unaccountedErasure(entries: readonly AuditEntry[]): { brokenAt: number; problem: string } | null {
  const accounted = new Map<string, number>();
  for (const entry of entries) {
    if (!ERASING_KINDS.has(entry.kind) || entry.erasedAt !== undefined) continue;
    const count = entry.data.auditEntries;
    accounted.set(entry.at, (accounted.get(entry.at) ?? 0) + (typeof count === 'number' ? count : 0));
  }
  const seen = new Map<string, number>();
  for (const entry of entries) {
    const at = entry.erasedAt;
    if (at === undefined || at === AUDIT_KEY_DESTROYED) continue;
    const n = (seen.get(at) ?? 0) + 1;
    seen.set(at, n);
    if (ERASING_KINDS.has(entry.kind) || n > (accounted.get(at) ?? 0)) {
      return {
        brokenAt: entry.seq,
        problem: `entry ${entry.seq} is marked erased at ${at}, but no erasure or purge at that time accounts for it`,
      };
    }
  }
  return null;
}
