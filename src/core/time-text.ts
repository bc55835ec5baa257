/** "23h 59m", "4m 10s", "3s": how long until an expiry (the page's script keeps it ticking). */
export function remainingText(untilIso: string, nowMs: number): string {
  const ms = Date.parse(untilIso) - nowMs;
  if (ms <= 0) return 'expired';
  return spanText(ms);
}

/** "3m ago", "2h 5m ago". */
export function ageText(sinceIso: string, nowMs: number): string {
  const ms = nowMs - Date.parse(sinceIso);
  return ms < 1000 ? 'just now' : `${spanText(ms)} ago`;
}

function spanText(ms: number): string {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s % 60}s`;
  return `${s}s`;
}
