import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: under Node's ESM loader its function is the default's default.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

type Json = Record<string, unknown>;

export interface ReceivedResponse {
  method: string;
  /** Path, with or without a query string. */
  path: string;
  status: number;
  contentType: string | null;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: unknown;
}

/**
 * Checks responses against an OpenAPI 3.1 document: the operation must exist, the status must
 * be documented, and a JSON body must match its schema with every object closed
 * (`additionalProperties: false`), so a field the server sends but the document does not
 * describe fails. Throws an error naming the request and what did not match.
 */
export type ContractCheck = (response: ReceivedResponse) => void;

const checkers = new Map<string, ContractCheck>();

export function contractChecker(document: Json): ContractCheck {
  const key = JSON.stringify(document);
  let check = checkers.get(key);
  if (!check) {
    check = buildChecker(document);
    checkers.set(key, check);
  }
  return check;
}

function buildChecker(document: Json): ContractCheck {
  const paths = document.paths as Record<string, Record<string, Json>>;
  const components = document.components as { schemas: Json; responses: Record<string, Json> };
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  const defs = closeObjects(toDefs(components.schemas)) as Json;
  const compiled = new Map<string, ValidateFunction>();
  // Fixed segments before parameters: /v1/audit/verify is not /v1/audit/{id}.
  const templates = Object.keys(paths)
    .map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      params: (template.match(/\{/g) ?? []).length,
    }))
    .sort((a, b) => a.params - b.params);
  const errorSchema = { $ref: '#/components/schemas/Error' };

  const validate = (id: string, schema: Json, body: unknown, where: string) => {
    let fn = compiled.get(id);
    if (!fn) {
      fn = ajv.compile({ ...(closeObjects(toDefs(schema)) as Json), $defs: defs });
      compiled.set(id, fn);
    }
    if (!fn(body))
      throw new Error(
        `${where}: the body does not match the OpenAPI document: ${ajv.errorsText(fn.errors)}\n` +
          `body: ${JSON.stringify(body).slice(0, 2000)}`,
      );
  };

  return (response) => {
    const path = response.path.split('?')[0]!;
    const method = response.method.toLowerCase();
    const where = `${response.method} ${path} → ${response.status}`;
    const found = templates.find(({ pattern }) => pattern.test(path));
    const operation = found ? paths[found.template]![method] : undefined;
    if (!found || !operation) {
      // An undocumented route may only answer with an error.
      if (response.status < 400) throw new Error(`${where}: the route is not in the OpenAPI document.`);
      validate('error', errorSchema, response.body, where);
      return;
    }
    const responses = operation.responses as Record<string, Json>;
    const status = String(response.status);
    let documented = responses[status] ?? responses[`${status[0]}XX`] ?? responses.default;
    if (!documented) throw new Error(`${where}: status ${status} is not documented.`);
    if (typeof documented.$ref === 'string')
      documented = components.responses[documented.$ref.split('/').pop()!]!;
    const content = documented.content as Record<string, { schema: Json }>;
    const type = (response.contentType ?? '').split(';')[0]!.trim();
    const media = content[type];
    if (!media) throw new Error(`${where}: content type ${type} is not documented.`);
    if (type === 'application/json')
      validate(`${found.template} ${method} ${status}`, media.schema, response.body, where);
  };
}

/** The document's component refs as refs into the compiled schema's own $defs. */
function toDefs(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/$defs/'));
}

/** Every object schema with properties, closed to properties it does not list. */
function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    // Inside `properties` the keys are field names, not keywords.
    out[key] =
      key === 'properties' || key === '$defs'
        ? Object.fromEntries(
            Object.entries(value as Json).map(([name, inner]) => [name, closeObjects(inner)]),
          )
        : closeObjects(value);
  }
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

/**
 * `fetch` that checks every response against the document the server at `base` serves; for
 * tests that talk to a real server over HTTP. The response is returned unread.
 */
export function contractFetch(base: string): (path: string, init?: RequestInit) => Promise<Response> {
  let check: Promise<ContractCheck> | undefined;
  return async (path, init = {}) => {
    check ??= fetch(`${base}/v1/openapi.json`).then(async (r) => contractChecker((await r.json()) as Json));
    const response = await fetch(`${base}${path}`, init);
    const contentType = response.headers.get('content-type');
    if (!contentType?.startsWith('text/event-stream')) {
      const text = await response.clone().text();
      (await check)({
        method: init.method ?? 'GET',
        path,
        status: response.status,
        contentType,
        body: parseBody(text),
      });
    }
    return response;
  };
}

export function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
