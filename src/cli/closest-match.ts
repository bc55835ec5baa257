/** Edit distance (insertions, deletions, substitutions, adjacent swaps) between two words. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate a typo most likely meant, or undefined when none is close: within a third of
 * the word's length (at least one edit, at most three), or the only candidate it begins.
 */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const typed = word.toLowerCase();
  const list = [...candidates];
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of list) {
    const distance = editDistance(typed, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.min(3, Math.max(1, Math.floor(typed.length / 3)));
  if (best !== undefined && bestDistance <= allowed) return best;
  const prefixed = list.filter((candidate) => typed.length >= 2 && candidate.startsWith(typed));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
