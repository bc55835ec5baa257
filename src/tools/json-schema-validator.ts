import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type addFormats from 'ajv-formats';
import { ConfigError } from '../core/errors/config-error.ts';
import { lazyRequire } from '../core/lazy-require.ts';
import type { InputCheck, JsonSchemaObject } from './input-schema.ts';

/*
 * ajv 8 checks what the model sent against a tool's JSON Schema: trusting the model would
 * let a malformed call reach a person's inbox (or a tool) unchecked. One instance per draft,
 * made on first use; `strict: false` because schemas written for models carry extra keywords
 * (titles, examples, provider hints) that are not errors.
 */
const ajvModule = lazyRequire<{ Ajv: typeof Ajv }>('ajv');
const ajv2020Module = lazyRequire<{ Ajv2020: typeof Ajv2020 }>('ajv/dist/2020.js');
const formatsModule = lazyRequire<{ default: typeof addFormats.default }>('ajv-formats');

const shared = new Map<'draft-07' | '2020-12', Ajv | Ajv2020>();

function dialectOf(schema: JsonSchemaObject): 'draft-07' | '2020-12' {
  const named = typeof schema.$schema === 'string' ? schema.$schema : '';
  return named.includes('2020-12') || named.includes('2019-09') ? '2020-12' : 'draft-07';
}

function newValidator(dialect: 'draft-07' | '2020-12'): Ajv | Ajv2020 {
  const options = { strict: false, allErrors: true } as const;
  const ajv = dialect === '2020-12' ? new (ajv2020Module().Ajv2020)(options) : new (ajvModule().Ajv)(options);
  formatsModule().default(ajv);
  return ajv;
}

function validatorFor(schema: JsonSchemaObject): Ajv | Ajv2020 {
  const dialect = dialectOf(schema);
  // A schema with an $id compiles once per instance, and agent.with() builds the tools again.
  if (schema.$id !== undefined) return newValidator(dialect);
  let ajv = shared.get(dialect);
  if (!ajv) {
    ajv = newValidator(dialect);
    shared.set(dialect, ajv);
  }
  return ajv;
}

export function compileJsonSchema(
  schema: JsonSchemaObject,
  toolName: string,
): (value: unknown) => InputCheck {
  let validate: ValidateFunction;
  try {
    validate = validatorFor(schema).compile(schema);
  } catch (cause) {
    throw new ConfigError(`Tool ${toolName}'s JSON Schema is not valid: ${(cause as Error).message}`, {
      hint: 'Check it against https://json-schema.org (draft-07 unless $schema names another draft).',
      cause,
    });
  }
  return (value) => {
    if (validate(value)) return { ok: true, value };
    return { ok: false, issues: (validate.errors ?? []).map(describeAjvError) };
  };
}

function describeAjvError(error: ErrorObject): string {
  const where = error.instancePath ? error.instancePath.slice(1).replaceAll('/', '.') : '(arguments)';
  const extra =
    error.keyword === 'additionalProperties'
      ? ` (${String((error.params as { additionalProperty?: unknown }).additionalProperty)})`
      : '';
  return `${where}: ${error.message ?? 'is not valid'}${extra}`;
}
