/**
 * A lease owner names the run holding a session: `SPACE:PID:NONCE[:TOKEN]`.
 *
 * - SPACE: where the PID means something (process-space.ts): `host/<pid namespace>.<boot>`,
 *   or a bare host name (owners written before spaces existed, or a system without /proc);
 * - PID: the process in that space; NONCE: random, one per run;
 * - TOKEN: what the process holds for as long as it lives (the Liveness port), when it held
 *   one as the owner was minted. Owners written before tokens existed have none.
 *
 * Anything else (an owner a test or another tool wrote) does not parse, and a holder that
 * cannot be read is never judged dead.
 */
export interface ParsedOwner {
  space: string;
  pid: number;
  token: string | null;
}

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

export function formatOwner(space: string, pid: number, nonce: string, token: string | null): string {
  return token === null ? `${space}:${pid}:${nonce}` : `${space}:${pid}:${nonce}:${token}`;
}

export function parseOwner(owner: string): ParsedOwner | null {
  const parts = owner.split(':');
  if (parts.length !== 3 && parts.length !== 4) return null;
  const [space = '', pidText = '', nonce = '', token] = parts;
  const pid = Number(pidText);
  if (space === '' || nonce === '' || !/^\d+$/.test(pidText) || !Number.isSafeInteger(pid) || pid < 1) {
    return null;
  }
  if (token !== undefined && !TOKEN.test(token)) return null;
  return { space, pid, token: token ?? null };
}
