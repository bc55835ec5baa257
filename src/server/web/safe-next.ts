/**
 * Where to send a person after sign-in: only a path on this site. Browsers drop tabs and
 * line breaks from a URL (`/\t/evil.example` becomes `//evil.example`, another host), read
 * `\` as `/`, and a Location header cannot carry anything but bytes, so everything outside
 * printable ASCII, any `//` and any `\` falls back to the inbox. Never throws.
 */
export function safeNext(next: unknown, fallback = '/'): string {
  if (typeof next !== 'string' || next.length > 2048) return fallback;
  if (!/^\/[\x21-\x7e]*$/.test(next)) return fallback;
  if (next.includes('//') || next.includes('\\')) return fallback;
  return next;
}
