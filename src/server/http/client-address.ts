import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../../core/errors/config-error.ts';

/** Which peers are reverse proxies whose X-Forwarded-For is believed. */
export interface TrustedProxies {
  trusts(address: string): boolean;
}

const LOOPBACK: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
];

/**
 * COUNTERSIGN_TRUST_PROXY: comma-separated IP addresses, CIDR ranges (`10.0.0.0/8`,
 * `fd00::/8`) and the word `loopback` (127.0.0.0/8 and ::1). Empty: no proxy is trusted and
 * the client is the connection's peer.
 */
export function parseTrustedProxies(
  spec: string | undefined,
  source = 'COUNTERSIGN_TRUST_PROXY',
): TrustedProxies {
  const list = new BlockList();
  let any = false;
  for (const entry of (spec ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    any = true;
    if (entry === 'loopback') {
      for (const [network, prefix, type] of LOOPBACK) list.addSubnet(network, prefix, type);
      continue;
    }
    const [network = '', prefixText, extra] = entry.split('/');
    const type = isIP(network) === 4 ? 'ipv4' : isIP(network) === 6 ? 'ipv6' : null;
    const max = type === 'ipv4' ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (!type || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > max)
      throw new ConfigError(`${source}: "${entry}" is not an IP address, a CIDR range or "loopback".`, {
        hint: 'For example COUNTERSIGN_TRUST_PROXY=loopback or COUNTERSIGN_TRUST_PROXY=10.0.0.0/8,192.0.2.7',
      });
    list.addSubnet(network, prefix, type);
  }
  return {
    trusts(address) {
      if (!any) return false;
      const type = isIP(address);
      return type !== 0 && list.check(address, type === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/** A bare address from a socket or a forwarded hop (`1.2.3.4:80`, `[::1]:80`, `::ffff:1.2.3.4`), or null. */
export function normalizeAddress(raw: string | undefined): string | null {
  if (!raw) return null;
  let text = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(':'));
  text = text.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (mapped) text = mapped[1]!;
  return isIP(text) === 0 ? null : text;
}

/**
 * The client's address: the connection's peer, unless that peer is a trusted proxy; then
 * X-Forwarded-For is read from the right (each proxy appends the address it saw) and the
 * first address that is not a trusted proxy is the client. Hops to the left of it were
 * written by the client itself and prove nothing. A malformed hop stops the walk at the
 * proxy that passed it on.
 */
export function resolveClientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies,
): string {
  let address = normalizeAddress(peer);
  if (address === null) return 'unknown';
  if (!trusted.trusts(address)) return address;
  const hops = (forwardedFor ?? '').split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    if (hops[i]!.trim() === '') continue;
    const hop = normalizeAddress(hops[i]);
    if (hop === null) return address;
    address = hop;
    if (!trusted.trusts(hop)) return hop;
  }
  return address;
}

/**
 * What the rate limit counts against: an IPv4 address, or an IPv6 address's /64 (one
 * customer's network, in which a client picks any address it likes).
 */
export function addressGroup(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = '', tail] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  // An embedded IPv4 tail (::ffff:… is normalized away; others are rare) counts as two groups.
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
