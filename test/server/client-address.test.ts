import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/server/auth/rate-limiter.ts';
import {
  addressGroup,
  normalizeAddress,
  parseTrustedProxies,
  resolveClientAddress,
} from '../../src/server/http/client-address.ts';
import { serverConfigFromEnv } from '../../src/server/server-config.ts';

describe('the client address behind proxies, and the limiter keyed by it', () => {
  it('reads X-Forwarded-For only from a trusted peer, right to left, stopping at the first untrusted hop', () => {
    const none = parseTrustedProxies(undefined);
    const loopback = parseTrustedProxies('loopback');
    const chain = parseTrustedProxies('10.0.0.0/8, 192.0.2.7');
    expect(resolveClientAddress('127.0.0.1', '203.0.113.5', none)).toBe('127.0.0.1');
    expect(resolveClientAddress('::ffff:127.0.0.1', '203.0.113.5', loopback)).toBe('203.0.113.5');
    expect(resolveClientAddress('::1', '1.1.1.1, 203.0.113.5', loopback)).toBe('203.0.113.5');
    expect(resolveClientAddress('192.0.2.7', '203.0.113.5, 10.1.2.3', chain)).toBe('203.0.113.5');
    expect(resolveClientAddress('192.0.2.8', '203.0.113.5', chain)).toBe('192.0.2.8');
    // Malformed or missing: the proxy that passed it on is the client we can name.
    expect(resolveClientAddress('10.0.0.1', 'not-an-ip', chain)).toBe('10.0.0.1');
    expect(resolveClientAddress('10.0.0.1', undefined, chain)).toBe('10.0.0.1');
    expect(resolveClientAddress('10.0.0.1', '203.0.113.5:4711, [2001:db8::1]:80', chain)).toBe('2001:db8::1');
    expect(resolveClientAddress(undefined, '203.0.113.5', loopback)).toBe('unknown');
  });

  it('refuses a proxy list it cannot read, at start', () => {
    for (const bad of ['localhost', '10.0.0.0/33', '10.0.0.1/8/8', '2001:db8::/129'])
      expect(() => parseTrustedProxies(bad)).toThrow(/COUNTERSIGN_TRUST_PROXY: ".*" is not an IP address/);
    expect(() => serverConfigFromEnv({ COUNTERSIGN_TRUST_PROXY: 'proxy.internal' })).toThrow(/TRUST_PROXY/);
    expect(serverConfigFromEnv({ COUNTERSIGN_TRUST_PROXY: ' loopback ' }).trustProxy).toBe('loopback');
  });

  it('groups IPv6 by /64 and normalizes what sockets and proxies write', () => {
    expect(addressGroup('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:0db8:0001:0002:0:0:0:1')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('203.0.113.5')).toBe('203.0.113.5');
    expect(normalizeAddress('fe80::1%eth0')).toBe('fe80::1');
    expect(normalizeAddress('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(normalizeAddress('evil')).toBeNull();
  });

  it('keeps memory bounded however many addresses fail, and the server-wide budget still holds', () => {
    let t = 0;
    const limiter = createRateLimiter({ maxFailures: 3, windowMs: 60_000, maxAddresses: 100, now: () => t });
    for (let i = 0; i < 20_000; i++) limiter.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(limiter.size).toBeLessThanOrEqual(100);
    expect(limiter.blockedFor('192.0.2.1')).toBeGreaterThan(0);
    t += 60_001;
    expect(limiter.blockedFor('192.0.2.1')).toBe(0);
    for (let i = 0; i < 3; i++) limiter.fail('192.0.2.1');
    expect(limiter.blockedFor('192.0.2.1')).toBe(60);
    expect(limiter.blockedFor('192.0.2.2')).toBe(0);
    limiter.reset('192.0.2.1');
    expect(limiter.blockedFor('192.0.2.1')).toBe(0);
  });
});
