import { readdirSync, readFileSync } from 'node:fs';

/** Whether `url` names a server on this machine (loopback or a socket directory). */
function isLocal(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === '' || host === 'localhost' || host === '[::1]' || host.startsWith('127.');
  } catch {
    return false;
  }
}

/**
 * CPU time, in microseconds, spent so far by the PostgreSQL processes on this machine (the
 * postmaster, its backends and its background workers), read from /proc. Undefined when `url`
 * names another machine, or where /proc is missing (not Linux) or shows no PostgreSQL process:
 * that server's CPU cannot be counted from here. A backend that exits between two readings
 * takes its time with it, so read it around a phase whose connections stay open.
 */
export function postgresCpuMicros(url: string): number | undefined {
  if (!isLocal(url)) return undefined;
  let ticks = 0;
  let found = false;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    if (!comm.startsWith('postgres')) continue;
    // Fields after the command: state is 0, utime 11 and stime 12 (proc(5) fields 14 and 15).
    const fields = stat.slice(close + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
    found = true;
  }
  // Linux reports these in USER_HZ, 100 per second on every architecture Node runs on.
  return found ? ticks * 10_000 : undefined;
}
