import type { JsonObject, JsonValue } from '../../core/json.ts';
import type { DemoCall } from './parse-request.ts';

/** The JSON Schema of each offered tool, by name, as the agent sent it. */
export type OfferedSchemas = ReadonlyMap<string, unknown>;

interface Property {
  name: string;
  type: string | undefined;
}

const verb = /\b(?:use|call|run)\s+(?:the\s+)?([a-zA-Z][\w-]{0,63})(?:\s+tool)?\b/gi;

/**
 * "use add_note with text hello", "call add_note text=hello" or "run add_note {"text":"hi"}":
 * a call of any offered tool, its arguments read by the names in its JSON Schema, so a tool
 * of one's own can be tried offline. Only names of offered tools count, so "call the shop"
 * is still ordinary text.
 */
export function namedCall(text: string, schemas: OfferedSchemas): DemoCall | undefined {
  for (const match of text.matchAll(verb)) {
    const tool = match[1] ?? '';
    if (!schemas.has(tool)) continue;
    const rest = text
      .slice(match.index + match[0].length)
      .replace(/^\s*(?:with|using|:)?\s*/i, '')
      .trim();
    return { tool, args: readArgs(rest, propertiesOf(schemas.get(tool))) };
  }
  return undefined;
}

/** A usage line for help: how to call this tool by name, with sample values for its required properties. */
export function namedCallExample(tool: string, schema: unknown): string {
  const properties = propertiesOf(schema);
  const required = (schema as { required?: unknown } | null)?.required;
  const shown = Array.isArray(required) ? properties.filter((p) => required.includes(p.name)) : [];
  const sample = (shown.length > 0 ? shown : properties.slice(0, 1)).map(
    (p) =>
      `${p.name} ${p.type === 'number' || p.type === 'integer' ? '7' : p.type === 'boolean' ? 'true' : 'hello'}`,
  );
  return sample.length > 0 ? `Use ${tool} with ${sample.join(' ')}.` : `Use ${tool}.`;
}

function propertiesOf(schema: unknown): Property[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | null)?.properties ?? {};
  return Object.entries(properties).map(([name, spec]) => ({
    name,
    type: typeof spec?.type === 'string' ? spec.type : undefined,
  }));
}

function readArgs(rest: string, properties: Property[]): JsonObject {
  const json = rest.match(/^\{[\s\S]*\}/)?.[0];
  if (json) {
    try {
      const parsed = JSON.parse(json) as JsonValue;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
    } catch {
      // Not JSON after all: read it as words.
    }
  }
  if (/\b[\w-]+\s*=/.test(rest)) return readAssignments(rest, properties);
  return readWords(rest.replace(/[.!?]+$/, ''), properties);
}

/** key=value pairs; a value may be quoted to hold spaces. */
function readAssignments(rest: string, properties: Property[]): JsonObject {
  const args: JsonObject = {};
  for (const match of rest.matchAll(/([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s,]+))/g)) {
    const name = match[1] ?? '';
    const raw = match[2] ?? match[3] ?? match[4] ?? '';
    args[name] = coerce(raw, properties.find((p) => p.name === name)?.type);
  }
  return args;
}

/** "text hello world and tag urgent": each schema property name starts its value. */
function readWords(rest: string, properties: Property[]): JsonObject {
  const args: JsonObject = {};
  const starts = properties
    .map((property) => ({
      property,
      at: new RegExp(String.raw`\b${escapeRegExp(property.name)}\b`, 'i').exec(rest),
    }))
    .filter((found): found is { property: Property; at: RegExpExecArray } => found.at !== null)
    .sort((a, b) => a.at.index - b.at.index);
  if (starts.length === 0) {
    // One property and no name given: "use add_note hello" means that property.
    const [only] = properties;
    if (only && properties.length === 1 && rest !== '') args[only.name] = coerce(rest, only.type);
    return args;
  }
  starts.forEach(({ property, at }, index) => {
    const end = starts[index + 1]?.at.index ?? rest.length;
    const value = rest
      .slice(at.index + at[0].length, end)
      .replace(/^\s*(?:is|of|:|=)?\s*/i, '')
      .replace(/\s*(?:,|\band\b)?\s*$/i, '')
      .replace(/^["']|["']$/g, '');
    args[property.name] = coerce(value, property.type);
  });
  return args;
}

/** Values as the schema's type wants them; anything unreadable is left for validation to refuse. */
function coerce(raw: string, type: string | undefined): JsonValue {
  if ((type === 'number' || type === 'integer') && raw.trim() !== '' && Number.isFinite(Number(raw)))
    return Number(raw);
  if (type === 'boolean' && /^(true|false|yes|no)$/i.test(raw)) return /^(true|yes)$/i.test(raw);
  if (type === 'array') return raw.split(/\s*,\s*/).filter((item) => item !== '');
  return raw;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
