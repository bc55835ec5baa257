import { createHmac } from 'node:crypto';
import { ConfigError } from '../../core/errors/config-error.ts';

/**
 * The Standard Webhooks signature (standardwebhooks.com), beside countersign's own header, so
 * the `standardwebhooks` and svix libraries verify deliveries as they are.
 */
export const STANDARD_WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

const PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of a webhook secret. `whsec_<base64>` is the spec's form: the key is the decoded
 * bytes, 24 to 64 of them. Any other secret is used as its UTF-8 bytes (receivers then pass it
 * raw), so the secrets that worked before keep working.
 */
export function standardWebhookKey(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) return Buffer.from(secret, 'utf8');
  const encoded = secret.slice(PREFIX.length);
  const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : null;
  if (!key || key.length < 24 || key.length > 64)
    throw new ConfigError(
      'The webhook secret starts with whsec_ but is not 24 to 64 bytes in base64 after it.',
      {
        hint: "Use whsec_ and 32 random bytes in base64 (`node -p \"'whsec_' + crypto.randomBytes(32).toString('base64')\"`), or a secret without the whsec_ prefix.",
      },
    );
  return key;
}

/** The three headers for one attempt: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. */
export function standardWebhookHeaders(
  key: Buffer,
  id: string,
  body: string,
  timestamp: number,
): Record<string, string> {
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return {
    [STANDARD_WEBHOOK_HEADERS.id]: id,
    [STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [STANDARD_WEBHOOK_HEADERS.signature]: `v1,${mac}`,
  };
}
