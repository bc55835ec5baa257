export const isApiPath = (path: string): boolean => path === '/v1' || path.startsWith('/v1/');

const everywhere = {
  'x-content-type-options': 'nosniff',
  // Not no-referrer: with it Chromium sends "Origin: null" on our own form posts.
  'referrer-policy': 'same-origin',
};

const pages = {
  ...everywhere,
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
};

/** The headers every response of this path carries: the API's, or the pages' stricter set. */
export function securityHeaders(path: string): Readonly<Record<string, string>> {
  return isApiPath(path) ? everywhere : pages;
}
