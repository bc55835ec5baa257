import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../core/errors/config-error.ts';
import { userIdPattern } from '../../core/ids.ts';
import type { Identity } from './identity.ts';

export interface ApproverEntry {
  name: string;
  roles: string[];
  token: string;
}

/** Token holders by the SHA-256 of their token; the tokens themselves are not kept. */
export interface ApproverDirectory {
  readonly size: number;
  /** The holder of this token, or null. Compares against every entry in constant time. */
  authenticate(token: string): Identity | null;
  /**
   * The approver of this name with their roles as configured now, or null when there is no
   * such approver. Inbox sign-ins are resolved through it on every request.
   */
  byName(name: string): Identity | null;
}

const rolePattern = /^[a-z][a-z0-9_-]{0,31}$/;
/** Long enough that guessing is hopeless even without the rate limit. */
export const MIN_TOKEN_LENGTH = 16;

/** Parses `name:role[+role]:token` entries separated by commas or new lines; `#` starts a comment line. */
export function parseApproverEntries(text: string, source: string): ApproverEntry[] {
  const entries: ApproverEntry[] = [];
  const items = text
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter((item) => item !== '' && !item.startsWith('#'));
  for (const item of items) {
    const first = item.indexOf(':');
    const second = item.indexOf(':', first + 1);
    if (first < 1 || second < 0) {
      throw new ConfigError(`An entry in ${source} is not name:role[+role]:token.`, {
        hint: 'Example: alice:support+manager:3f1c… (the token is the rest after the second colon).',
      });
    }
    const name = item.slice(0, first);
    const roleText = item.slice(first + 1, second);
    const token = item.slice(second + 1);
    if (!userIdPattern.test(name))
      throw new ConfigError(`Approver name "${name}" in ${source} is not valid.`);
    const roles = roleText === '' ? [] : roleText.split('+');
    const badRole = roles.find((role) => !rolePattern.test(role));
    if (badRole !== undefined)
      throw new ConfigError(
        `Role "${badRole}" of ${name} in ${source} is not valid (lowercase letters, digits, _ -).`,
      );
    if (token.length < MIN_TOKEN_LENGTH) {
      throw new ConfigError(
        `The token of ${name} in ${source} is shorter than ${MIN_TOKEN_LENGTH} characters.`,
        {
          hint: 'Generate one with: node -e "console.log(crypto.randomBytes(24).toString(\'base64url\'))"',
        },
      );
    }
    if (entries.some((entry) => entry.name === name))
      throw new ConfigError(`Approver ${name} appears twice in ${source}.`);
    entries.push({ name, roles, token });
  }
  return entries;
}

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

export function createApproverDirectory(entries: readonly ApproverEntry[]): ApproverDirectory {
  const hashed = entries.map((entry) => ({
    name: entry.name,
    roles: [...entry.roles],
    hash: digest(entry.token),
  }));
  const digests = new Set(hashed.map((entry) => entry.hash.toString('hex')));
  if (digests.size !== hashed.length) throw new ConfigError('Two approvers share one token.');
  return {
    size: hashed.length,
    authenticate(token) {
      // Equal-length digests, and no early exit: the time taken says nothing about the token.
      const candidate = digest(token);
      let found: (typeof hashed)[number] | null = null;
      for (const entry of hashed) {
        if (timingSafeEqual(entry.hash, candidate)) found = entry;
      }
      return found ? { name: found.name, roles: found.roles, via: 'token' } : null;
    },
    byName(name) {
      const found = hashed.find((entry) => entry.name === name);
      return found ? { name: found.name, roles: [...found.roles], via: 'token' } : null;
    },
  };
}
