import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Where this process's PID means something: the kernel boot and the PID namespace it runs
 * in. Two processes see each other's PIDs exactly when both are equal; a host name alone
 * does not say so (containers with host networking, or pods with `hostNetwork`, share the
 * host's name but each has its PID namespace, and two machines can carry the same name).
 */
export interface ProcessSpace {
  /** The host name, with `:` (the lease owner's separator) replaced. */
  hostname: string;
  /**
   * `hostname/<pid namespace inode>.<boot id>`, or the host name alone where /proc cannot
   * tell (not Linux): then PIDs are compared by host name, as before spaces existed.
   */
  space: string;
  pid: number;
}

function readSpace(): ProcessSpace {
  const name = hostname().replaceAll(':', '_');
  try {
    const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replaceAll('-', '').trim();
    if (namespace === undefined || !/^[0-9a-f]{16,}$/.test(boot)) throw new Error('unreadable');
    return { hostname: name, space: `${name}/${namespace}.${boot.slice(0, 16)}`, pid: process.pid };
  } catch {
    return { hostname: name, space: name, pid: process.pid };
  }
}

let cached: ProcessSpace | undefined;

/** This process's space, read once. */
export function thisProcess(): ProcessSpace {
  cached ??= readSpace();
  return cached;
}

/** Whether `pid` names no process in this PID namespace (gone and reaped). */
export function pidIsGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
