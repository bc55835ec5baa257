import { spawnSync } from 'node:child_process';

const onCi = (process.env.CI ?? '') !== '' && process.env.CI !== 'false' && process.env.CI !== '0';

/**
 * How a test runs a process as if on another host, with util-linux's `unshare`: a PID
 * namespace of its own (`--pid --fork --mount-proc`: its PIDs are not this one's, so a PID
 * check from here cannot see it) and, for `host`, a host name of its own (`--uts`). The
 * command runs under `sh` as PID 1 of the namespace, so it can SIGKILL itself (the kernel
 * ignores a signal PID 1 sends itself); `--kill-child` takes the namespace down when
 * `unshare` is killed. As root no more is needed; elsewhere a user namespace is tried.
 */
export type Elsewhere = { host: string } | { sameHostName: true };

const NAMESPACES = ['--pid', '--fork', '--mount-proc', '--kill-child'];

let probed: string[] | null | undefined;

/** unshare and its leading flags, or null where this machine cannot make namespaces. */
function unshare(): string[] | null {
  if (probed !== undefined) return probed;
  probed = null;
  for (const user of [[], ['--user', '--map-root-user']]) {
    const flags = [...user, '--uts', ...NAMESPACES];
    if (spawnSync('unshare', [...flags, 'true'], { stdio: 'ignore' }).status === 0) {
      probed = user;
      break;
    }
  }
  return probed;
}

/**
 * Whether other-host tests can run here. Under CI they must: an unusable `unshare` fails
 * the file instead of skipping it.
 */
export function canRunElsewhere(): boolean {
  const available = unshare() !== null;
  if (!available && onCi) {
    throw new Error(
      'Cross-host tests cannot run under CI: `unshare --uts --pid --fork --mount-proc` failed.',
    );
  }
  if (!available)
    console.warn('Cross-host tests skipped: `unshare` cannot make UTS and PID namespaces here.');
  return available;
}

/** [command, args] that run `argv` elsewhere; its exit code is the command's (137 after a SIGKILL). */
export function elsewhere(where: Elsewhere, argv: readonly string[]): [string, string[]] {
  const user = unshare();
  if (user === null) throw new Error('unshare is not usable here (check canRunElsewhere() first).');
  const [command = '', ...args] = argv;
  // Not `exec`: the shell stays PID 1 and the command is a child it waits for.
  if ('host' in where) {
    return [
      'unshare',
      [
        ...user,
        '--uts',
        ...NAMESPACES,
        'sh',
        '-c',
        'hostname "$1" && shift && "$@"; exit $?',
        'sh',
        where.host,
        command,
        ...args,
      ],
    ];
  }
  return ['unshare', [...user, ...NAMESPACES, 'sh', '-c', '"$@"; exit $?', 'sh', command, ...args]];
}
