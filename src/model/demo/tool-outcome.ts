import type { JsonValue } from '../../core/json.ts';

export interface ToolOutcome {
  ok: boolean;
  /** For success the output in words; for failure the reason, verbatim where there is one. */
  detail: string;
}

/*
 * Outputs cross the wire as plain text or JSON (an OpenAI-compatible server never sees an
 * error flag), so failure is read from the words, matching how countersign words them:
 * "Rejected by the reviewer, not done. Reason: …", "Invalid arguments for …", "Not allowed: …".
 */
const failureLead =
  /^(?:rejected|expired|not done|not allowed|not permitted|refused|denied|declined|forbidden|unauthori[sz]ed|the tool failed|tool failed|failed|error|unknown tool|invalid|arguments for)\b/i;
const failureAnywhere = /\bnothing was (?:run|done|changed)\b/i;
const failureStatus = /^(?:rejected|denied|refused|declined|failed|failure|error|expired|not[ _-]done)$/i;
const rejectionWords =
  /\b(?:rejected|declined|denied|expired|turned (?:it )?down|moved on|sent a new message|not approved)\b|^not done\b/i;

export function readOutcome(output: JsonValue, flaggedError = false): ToolOutcome {
  if (typeof output === 'string') {
    const failed = flaggedError || failureLead.test(output.trim()) || failureAnywhere.test(output);
    return { ok: !failed, detail: failed ? output : `"${output}"` };
  }
  if (isObject(output)) {
    const failed =
      flaggedError ||
      (output.error !== undefined && output.error !== null && output.error !== false) ||
      output.ok === false ||
      output.success === false ||
      output.isError === true ||
      (typeof output.status === 'string' && failureStatus.test(output.status));
    const message = typeof output.message === 'string' ? output.message : undefined;
    if (!failed) return { ok: true, detail: message ?? render(output) };
    const error =
      isObject(output.error) && typeof output.error.message === 'string'
        ? output.error.message
        : output.error;
    const reason = [output.reason, message, error].find((value) => typeof value === 'string');
    return { ok: false, detail: typeof reason === 'string' ? reason : render(output) };
  }
  return { ok: !flaggedError, detail: render(output) };
}

/** A person (or the system on their behalf) said no: the same call must not be proposed again. */
export function isRejection(detail: string): boolean {
  return rejectionWords.test(detail.trim());
}

/** Plain words for a JSON value; deterministic because key order is the output's own. */
export function render(value: JsonValue): string {
  if (value === null) return 'done';
  if (typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.map(render).join('; ');
  const entries = Object.entries(value);
  if (entries.length === 0) return 'done';
  // A lone list under a key ({ items: [...] }, { books: [...] }) reads best as the list itself.
  const [only] = entries;
  if (entries.length === 1 && only && Array.isArray(only[1])) return render(only[1]);
  return entries.map(([key, item]) => `${key}: ${renderNested(item)}`).join(', ');
}

function renderNested(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(renderNested).join(', ')}]`;
  if (typeof value === 'object' && value !== null) return `(${render(value)})`;
  return String(value);
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
