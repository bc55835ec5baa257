import { parseDuration, parseRetentionPeriod } from './duration.ts';
import { ConfigError } from './errors/config-error.ts';

/** What retention removes, each after its own period. */
export const RETENTION_KINDS = ['sessions', 'runs', 'requests', 'audit'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** Periods in milliseconds; a kind left out is kept for ever. */
export type RetentionPolicy = Partial<Record<RetentionKind, number>>;

/** ISO-8601 instants: what finished (was decided, was written) before one is past its period. */
export type RetentionCutoffText = Partial<Record<RetentionKind, string>>;

const EXAMPLE = 'sessions=90d,runs=30d,requests=90d,audit=7y';

/**
 * Parses `sessions=90d,runs=30d,requests=90d,audit=7y` (COUNTERSIGN_RETENTION): comma-separated
 * `kind=duration`, each kind once. Anything else is CONFIG_ERROR naming the entry, so a
 * typo never silently keeps (or removes) data; a period whose cutoff from `now` falls before
 * the year 0000 is INVALID_INPUT naming it (parseRetentionPeriod).
 */
export function parseRetention(
  text: string,
  source = 'COUNTERSIGN_RETENTION',
  now: Date = new Date(),
): RetentionPolicy {
  const policy: RetentionPolicy = {};
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) {
    throw new ConfigError(`${source} is empty.`, {
      hint: `Set periods per kind, e.g. ${EXAMPLE}, or unset it.`,
    });
  }
  for (const entry of entries) {
    const [kind, period, ...rest] = entry.split('=');
    if (
      period === undefined ||
      rest.length > 0 ||
      !(RETENTION_KINDS as readonly string[]).includes(kind!.trim())
    ) {
      throw new ConfigError(`${source} has "${entry}", which is not kind=duration.`, {
        hint: `The kinds are ${RETENTION_KINDS.join(', ')}; e.g. ${EXAMPLE}.`,
      });
    }
    const name = kind!.trim() as RetentionKind;
    if (policy[name] !== undefined) {
      throw new ConfigError(`${source} names ${name} twice.`, {
        hint: `Give each kind one period, e.g. ${EXAMPLE}.`,
      });
    }
    const text = period.trim();
    try {
      parseDuration(text, `${source} ${name}`);
    } catch (error) {
      throw new ConfigError(`${source} has ${name}=${text}, which is not a period.`, {
        hint: 'Use a number with a unit: 12h, 90d, 2w or 7y.',
        cause: error,
      });
    }
    // A period that reads but is too long is INVALID_INPUT naming the entry, as a too-long
    // COUNTERSIGN_APPROVAL_TTL is (duration.ts): the value is wrong, not the syntax.
    policy[name] = parseRetentionPeriod(text, `${source} ${name}`, now);
  }
  return policy;
}

/**
 * The cutoff of each kind the policy names, `now` minus its period. A period that is not
 * one (zero, negative, NaN) or whose cutoff falls before the year 0000 is INVALID_INPUT
 * naming it (`name(kind)`), never a RangeError: purge computes its cutoffs with this before
 * it reads a row, and createServer calls it once to refuse a bad policy where it is given.
 */
export function retentionCutoffs(
  policy: RetentionPolicy,
  now: Date,
  name: (kind: RetentionKind) => string = (kind) => `retention period of ${kind}`,
): RetentionCutoffText {
  const cutoffs: RetentionCutoffText = {};
  for (const kind of RETENTION_KINDS) {
    const period = policy[kind];
    if (period === undefined) continue;
    const ms = parseRetentionPeriod(period, name(kind), now);
    cutoffs[kind] = new Date(now.getTime() - ms).toISOString();
  }
  return cutoffs;
}

/** Whether a policy removes anything at all. */
export function retainsSomething(policy: RetentionPolicy): boolean {
  return RETENTION_KINDS.some((kind) => policy[kind] !== undefined);
}

const DAY = 86_400_000;

/** `sessions 90d, audit 7y`: the policy in words, for serve's banner. */
export function describeRetention(policy: RetentionPolicy): string {
  const words = (ms: number): string =>
    ms % (365 * DAY) === 0
      ? `${ms / (365 * DAY)}y`
      : ms % DAY === 0
        ? `${ms / DAY}d`
        : ms % 3_600_000 === 0
          ? `${ms / 3_600_000}h`
          : `${ms}ms`;
  return RETENTION_KINDS.flatMap((kind) =>
    policy[kind] === undefined ? [] : [`${kind} ${words(policy[kind])}`],
  ).join(', ');
}
