import { z } from 'zod';
import { JSON_VALUE_DESCRIPTION } from '../../core/json-schema.ts';
import { statusOfCode } from '../http/error-status.ts';
import { type Operation, operations, runOperations } from './operations.ts';
import { components } from './response-schemas.ts';

type Schema = Record<string, unknown>;

const componentRef = (id: string) => `#/components/schemas/${id}`;

/**
 * Converts every schema the document uses in one pass over one registry, so a component used
 * inside another is a `$ref` to it, never a copy or a `$defs` ref that does not resolve here.
 * OpenAPI 3.1 takes JSON Schema 2020-12 as it is: nullable is `type: [..., "null"]` or
 * `anyOf` with a null, and a `$ref` may have a description beside it (3.0 allows neither).
 * `io: 'input'` documents a `z.object` open and a `z.strictObject` closed, as the routes treat them.
 */
function convert(schemas: Map<string, z.ZodType>): Record<string, Schema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of schemas) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'input',
    uri: componentRef,
    // The API's only custom schema is the JSON value (see json-value.ts).
    unrepresentable: 'any',
    override: (ctx) => {
      if (ctx.zodSchema._zod.def.type === 'custom') ctx.jsonSchema.description ??= JSON_VALUE_DESCRIPTION;
    },
  }).schemas;
  for (const schema of Object.values(out)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return out as Record<string, Schema>;
}

/** The OpenAPI 3.1 description of /v1, served at /v1/openapi.json. */
export function openApiDocument(options: { runs: boolean } = { runs: false }): Schema {
  const served = options.runs ? [...operations, ...runOperations] : operations;
  const byId = new Map<string, z.ZodType>(Object.entries(components));
  const idOf = new Map<z.ZodType, string>([...byId].map(([id, schema]) => [schema, id]));
  // Any other schema is converted inside a fresh wrapper, then taken out: registering it
  // under its own name would turn its uses inside components into refs to that name.
  const use = (schema: z.ZodType, name: string): string => {
    const known = idOf.get(schema);
    if (known) return known;
    byId.set(name, z.object({ value: schema }));
    return name;
  };
  const uses = served.map((operation) => ({
    operation,
    body: operation.body ? use(operation.body, `${operation.operationId}Body`) : undefined,
    response:
      operation.response === 'event-stream'
        ? undefined
        : use(operation.response, `${operation.operationId}Response`),
    parameters: (operation.parameters ?? []).map((parameter) =>
      use(parameter.schema, `${operation.operationId}.${parameter.name}`),
    ),
  }));
  const converted = convert(byId);
  const schemaOf = (id: string): Schema =>
    id in components
      ? { $ref: componentRef(id) }
      : ((converted[id]!.properties as Record<string, Schema>).value as Schema);

  const paths: Record<string, Record<string, Schema>> = {};
  for (const { operation, body, response, parameters } of uses) {
    paths[operation.path] ??= {};
    paths[operation.path]![operation.method] = describeOperation(
      operation,
      body === undefined ? undefined : schemaOf(body),
      response === undefined ? undefined : schemaOf(response),
      parameters.map(schemaOf),
    );
  }

  return {
    openapi: '3.1.1',
    info: {
      title: 'countersign',
      version: '1',
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Tool calls that wait for a person, then run exactly as approved, once. Authenticate with ' +
        '`Authorization: Bearer <token>` (COUNTERSIGN_TOKENS) or, behind a trusted proxy, its identity header. ' +
        'Every error is `{"error":{"code","message"}}`; the code is stable, the message is for people.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        Error: {
          description: `An error. Codes and statuses: ${Object.entries(statusOfCode)
            .map(([code, status]) => `${code} ${status}`)
            .join(', ')}.`,
          content: { 'application/json': { schema: { $ref: componentRef('Error') } } },
        },
      },
      schemas: Object.fromEntries(usedComponents(paths, converted).map((id) => [id, converted[id]!])),
    },
  };
}

/** The components the paths reach, directly or through other components, in declaration order. */
function usedComponents(paths: Schema, converted: Record<string, Schema>): string[] {
  const used = new Set<string>(['Error']);
  const visit = (value: unknown) => {
    for (const [, id] of JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (used.has(id!)) continue;
      used.add(id!);
      visit(converted[id!]);
    }
  };
  visit(paths);
  return Object.keys(components).filter((id) => used.has(id));
}

/** What a paged list's 200 carries besides its array (list-query.ts: setPageHeaders). */
const PAGE_HEADERS = {
  Link: {
    description: 'RFC 8288 `<this URL with after=cursor>; rel="next"`; absent on the last page',
    schema: { type: 'string' },
  },
  'X-Next-Cursor': {
    description: 'The `after` of the next page; absent on the last page',
    schema: { type: 'string' },
  },
  'X-Total-Count': {
    description: 'With count=true: how many match, up to the cap',
    schema: { type: 'integer' },
  },
  'X-Total-Capped': {
    description: 'With count=true: "true" when the count stopped at its cap (at least that many match)',
    schema: { type: 'string', enum: ['true'] },
  },
};

function describeOperation(
  operation: Operation,
  body: Schema | undefined,
  response: Schema | undefined,
  parameters: Schema[],
): Schema {
  const error = { $ref: '#/components/responses/Error' };
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    ...(operation.public ? { security: [] } : {}),
    ...(operation.deprecated ? { deprecated: true } : {}),
    ...(parameters.length > 0
      ? {
          parameters: (operation.parameters ?? []).map((parameter, index) => ({
            name: parameter.name,
            in: parameter.in,
            required: parameter.in === 'path',
            description: parameter.description,
            schema: parameters[index],
          })),
        }
      : {}),
    ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
    responses: {
      200: response
        ? {
            description: 'OK',
            ...(operation.paged === true ? { headers: PAGE_HEADERS } : {}),
            ...(operation.paged === 'link' ? { headers: { Link: PAGE_HEADERS.Link } } : {}),
            ...(operation.paged === 'cursor'
              ? { headers: { Link: PAGE_HEADERS.Link, 'X-Next-Cursor': PAGE_HEADERS['X-Next-Cursor'] } }
              : {}),
            content: { 'application/json': { schema: response } },
          }
        : {
            description: 'An event stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
      '4XX': error,
      default: error,
    },
  };
}
