import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/errors/config-error.ts';
import { parseRetention, type RetentionPolicy } from '../core/retention.ts';
import { type ApproverEntry, parseApproverEntries } from './auth/approver-tokens.ts';
import { parseTrustedProxies } from './http/client-address.ts';
import { type MetricsAccess, metricsAccessFromEnv } from './metrics.ts';

export interface EnvServerConfig {
  approvers: ApproverEntry[];
  /** Set when no approver was configured: a one-off token for `demo` (support + manager). */
  demoApprover: ApproverEntry | null;
  identityHeader: string | undefined;
  rolesHeader: string | undefined;
  webhook: { url: string; secret: string } | undefined;
  publicOrigin: string | undefined;
  secureCookies: boolean;
  /** COUNTERSIGN_CHAT_SECRET: what the host application signs customer tokens with. */
  chatSecret: string | undefined;
  /** COUNTERSIGN_TRUST_PROXY, checked: the proxies whose X-Forwarded-For is believed. */
  trustProxy: string | undefined;
  /** COUNTERSIGN_METRICS (off | open | token) with COUNTERSIGN_METRICS_TOKEN. */
  metrics: MetricsAccess;
  /** COUNTERSIGN_RETENTION: what serve purges every hour; undefined when unset. */
  retention: RetentionPolicy | undefined;
}

/** Reads COUNTERSIGN_TOKENS(_FILE), the identity header, webhooks, the public origin and the chat secret. */
export function serverConfigFromEnv(env: Readonly<Record<string, string | undefined>>): EnvServerConfig {
  const approvers: ApproverEntry[] = [];
  if (env.COUNTERSIGN_TOKENS?.trim())
    approvers.push(...parseApproverEntries(env.COUNTERSIGN_TOKENS, 'COUNTERSIGN_TOKENS'));
  if (env.COUNTERSIGN_TOKENS_FILE?.trim()) {
    let text: string;
    try {
      text = readFileSync(env.COUNTERSIGN_TOKENS_FILE, 'utf8');
    } catch (cause) {
      throw new ConfigError(
        `Cannot read COUNTERSIGN_TOKENS_FILE ${env.COUNTERSIGN_TOKENS_FILE}: ${(cause as Error).message}`,
      );
    }
    for (const entry of parseApproverEntries(text, env.COUNTERSIGN_TOKENS_FILE)) {
      if (approvers.some((known) => known.name === entry.name))
        throw new ConfigError(
          `Approver ${entry.name} is in both COUNTERSIGN_TOKENS and COUNTERSIGN_TOKENS_FILE.`,
        );
      approvers.push(entry);
    }
  }
  const identityHeader = env.COUNTERSIGN_IDENTITY_HEADER?.trim() || undefined;
  const rolesHeader = env.COUNTERSIGN_ROLES_HEADER?.trim() || undefined;
  if (rolesHeader && !identityHeader)
    throw new ConfigError('COUNTERSIGN_ROLES_HEADER needs COUNTERSIGN_IDENTITY_HEADER.');
  let demoApprover: ApproverEntry | null = null;
  if (approvers.length === 0 && !identityHeader) {
    demoApprover = {
      name: 'demo',
      roles: ['support', 'manager'],
      token: randomBytes(18).toString('base64url'),
    };
    approvers.push(demoApprover);
  }
  const url = env.COUNTERSIGN_WEBHOOK_URL?.trim();
  const secret = env.COUNTERSIGN_WEBHOOK_SECRET?.trim();
  if (Boolean(url) !== Boolean(secret))
    throw new ConfigError('Set both COUNTERSIGN_WEBHOOK_URL and COUNTERSIGN_WEBHOOK_SECRET, or neither.');
  if (url) {
    try {
      new URL(url);
    } catch {
      throw new ConfigError(`COUNTERSIGN_WEBHOOK_URL "${url}" is not a URL.`);
    }
  }
  const trustProxy = env.COUNTERSIGN_TRUST_PROXY?.trim() || undefined;
  parseTrustedProxies(trustProxy); // refuse a typo at start, not at the first request
  const publicOrigin = env.COUNTERSIGN_PUBLIC_ORIGIN?.trim().replace(/\/+$/, '') || undefined;
  return {
    approvers,
    demoApprover,
    identityHeader,
    rolesHeader,
    webhook: url && secret ? { url, secret } : undefined,
    publicOrigin,
    secureCookies: publicOrigin?.startsWith('https:') ?? false,
    chatSecret: env.COUNTERSIGN_CHAT_SECRET?.trim() || undefined,
    trustProxy,
    metrics: metricsAccessFromEnv(env),
    // Parsed at start: a typo is a CONFIG_ERROR now, not a silent keep-everything.
    retention: env.COUNTERSIGN_RETENTION?.trim() ? parseRetention(env.COUNTERSIGN_RETENTION) : undefined,
  };
}
