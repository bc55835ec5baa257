import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors/config-error.ts';
import { chatBannerLines, DEMO_CHAT_LINK_MS, serveChat } from '../../src/server/serve-chat.ts';

describe('the chat of `serve --chat`', () => {
  const nowMs = Date.parse('2026-12-01T10:00:00Z');

  it('with COUNTERSIGN_CHAT_SECRET set: that secret, and no demo link signed with it', async () => {
    const chat = await serveChat({ secret: 's'.repeat(40), demoCustomer: 'c-100', nowMs });
    expect(chat).toEqual({ secret: 's'.repeat(40), demo: null });
    expect(chatBannerLines('http://127.0.0.1:8787', chat)).toEqual([
      '  Chat:  http://127.0.0.1:8787/chat (customers arrive signed in, through links your app signs)',
    ]);
  });

  it('for the demo app without a secret: a fresh secret and a link for its customer, for 2 hours', async () => {
    const [one, two] = [
      await serveChat({ secret: undefined, demoCustomer: 'c-100', nowMs }),
      await serveChat({ secret: undefined, demoCustomer: 'c-100', nowMs }),
    ];
    expect(one.secret).not.toBe(two.secret);
    expect(one.secret.length).toBeGreaterThanOrEqual(32);
    expect(one.demo).toMatchObject({ customer: 'c-100', expiresAtMs: nowMs + DEMO_CHAT_LINK_MS });
    const lines = chatBannerLines('http://127.0.0.1:8787', one);
    expect(lines[0]).toBe(`  Chat:  http://127.0.0.1:8787/chat?token=${one.demo!.token}`);
    expect(lines[1]).toContain('signs in as customer c-100 until 12:00 UTC (2 hours;');
  });

  it('for an app without a demo customer and no secret: a configuration error that says what to set', async () => {
    const refused = serveChat({ secret: undefined, demoCustomer: undefined, nowMs });
    await expect(refused).rejects.toThrow(ConfigError);
    await expect(refused).rejects.toThrow('--chat needs COUNTERSIGN_CHAT_SECRET');
  });
});
