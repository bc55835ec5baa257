/**
 * What an answer at the console's approval prompt means (pure). `y`/`n` (and yes/no)
 * approve or reject, `e` edits the editable fields first, and a message of two words or more
 * is a new message to the agent. Anything else — a typo, a lone word — is unclear and the
 * prompt asks again: a request is never dropped (answered "moved on") because a key slipped.
 */
export type ConsoleAnswer =
  | { kind: 'quit' }
  | { kind: 'approve' }
  | { kind: 'reject' }
  | { kind: 'edit' }
  | { kind: 'message'; text: string }
  | { kind: 'unclear'; text: string };

export function readConsoleAnswer(raw: string | null, options: { editable: boolean }): ConsoleAnswer {
  if (raw === null) return { kind: 'quit' };
  const text = raw.trim();
  const lower = text.toLowerCase();
  if (lower === '' || lower === 'exit') return { kind: 'quit' };
  if (lower === 'y' || lower === 'yes') return { kind: 'approve' };
  if (lower === 'n' || lower === 'no') return { kind: 'reject' };
  if (options.editable && (lower === 'e' || lower === 'edit')) return { kind: 'edit' };
  return text.split(/\s+/).length >= 2 ? { kind: 'message', text } : { kind: 'unclear', text };
}

/** The value a person typed for an edited field: kept a string where the field was one, else JSON. */
export function fieldValue(typed: string, current: unknown): unknown {
  if (typeof current === 'string') return typed;
  try {
    return JSON.parse(typed);
  } catch {
    return typed;
  }
}
