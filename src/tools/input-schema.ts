import type { asSchema } from '@ai-sdk/provider-utils';
import { z } from 'zod';
import { ConfigError } from '../core/errors/config-error.ts';
import { lazyRequire } from '../core/lazy-require.ts';
import { compileJsonSchema } from './json-schema-validator.ts';

/** A JSON Schema object as sent to the model (draft-07 unless it says otherwise). */
export type JsonSchemaObject = { [key: string]: unknown };

/**
 * Every input schema a tool may declare: zod 4 or zod 3, any Standard Schema (`~standard`),
 * an AI SDK schema (`jsonSchema()`, `zodSchema()`) or a plain JSON Schema object. Written
 * structurally so no schema library is a type dependency of countersign's public API.
 */
export type ToolInputSchema =
  | z.ZodType
  | { readonly '~standard': { readonly vendor: string; readonly validate: (value: unknown) => unknown } }
  | { readonly jsonSchema: unknown; readonly validate?: unknown }
  | JsonSchemaObject;

export type InputCheck = { ok: true; value: unknown } | { ok: false; issues: string[] };

/** What the agent needs from a schema: its JSON form for the model and a real check. */
export interface CompiledInputSchema {
  readonly kind: 'zod4' | 'standard' | 'ai-sdk' | 'json-schema';
  readonly jsonSchema: JsonSchemaObject;
  validate(value: unknown): Promise<InputCheck>;
}

const providerUtils = lazyRequire<{ asSchema: typeof asSchema }>('@ai-sdk/provider-utils');

const aiSdkSchemaMarker = Symbol.for('vercel.ai.schema');

type StandardResult =
  | { value: unknown; issues?: undefined }
  | { issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }> };

interface StandardSchemaLike {
  '~standard': { vendor: string; validate: (value: unknown) => StandardResult | Promise<StandardResult> };
}

interface AiSdkSchemaLike {
  jsonSchema: unknown;
  validate?: (value: unknown) => unknown;
}

/**
 * Reads a tool's input schema once, when the agent is built, so a wrong shape is a
 * CONFIG_ERROR at start-up rather than an "Unknown tool" at the first call.
 */
export function compileInputSchema(input: unknown, toolName: string): CompiledInputSchema {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError(`Tool ${toolName} has no input schema.`, {
      hint: 'Give it a zod schema, a Standard Schema, jsonSchema({...}) or a JSON Schema object such as { type: "object", properties: {} }.',
    });
  }
  if ('_zod' in input) return zod4Schema(input as z.ZodType);
  if ('~standard' in input) return standardSchema(input as StandardSchemaLike, toolName);
  if (aiSdkSchemaMarker in input) return aiSdkSchema(input as unknown as AiSdkSchemaLike, toolName);
  if ('_def' in input) {
    throw new ConfigError(`Tool ${toolName} has a zod schema older than zod 3.24.`, {
      hint: 'Upgrade zod to 3.24 or later (it then implements Standard Schema), or use zod 4.',
    });
  }
  return plainJsonSchema(input as JsonSchemaObject, toolName);
}

/*
 * The exact conversion defineTool always used: the tool identity hashes this JSON Schema, so
 * changing it would silently void every standing "always approve" rule of existing tools.
 */
function zod4Schema(schema: z.ZodType): CompiledInputSchema {
  const jsonSchema = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as JsonSchemaObject;
  delete jsonSchema.$schema;
  return {
    kind: 'zod4',
    jsonSchema,
    async validate(value) {
      const parsed = await schema.safeParseAsync(value);
      if (parsed.success) return { ok: true, value: parsed.data };
      return {
        ok: false,
        issues: parsed.error.issues.map((issue) => describeIssue(issue.path, issue.message)),
      };
    },
  };
}

function standardSchema(schema: StandardSchemaLike, toolName: string): CompiledInputSchema {
  // The AI SDK's converter: zod 3 through its own zod-to-json-schema, others through
  // Standard JSON Schema (`~standard.jsonSchema`) where the library offers it.
  const jsonSchema = jsonSchemaOf(() => providerUtils().asSchema(schema as never).jsonSchema, toolName);
  return {
    kind: 'standard',
    jsonSchema,
    async validate(value) {
      const result = await schema['~standard'].validate(value);
      if (!result.issues) return { ok: true, value: result.value };
      return {
        ok: false,
        issues: result.issues.map((issue) =>
          describeIssue(
            (issue.path ?? []).map((segment) => (typeof segment === 'object' ? segment.key : segment)),
            issue.message,
          ),
        ),
      };
    },
  };
}

function aiSdkSchema(schema: AiSdkSchemaLike, toolName: string): CompiledInputSchema {
  const jsonSchema = jsonSchemaOf(() => schema.jsonSchema, toolName);
  const validate = schema.validate;
  // jsonSchema() without `validate` trusts the model; countersign checks it against the schema.
  if (typeof validate !== 'function') return { ...jsonSchemaValidator(jsonSchema, toolName), kind: 'ai-sdk' };
  return {
    kind: 'ai-sdk',
    jsonSchema,
    async validate(value) {
      const result = (await validate(value)) as { success: boolean; value?: unknown; error?: unknown };
      if (result.success) return { ok: true, value: result.value };
      return { ok: false, issues: issuesOf(result.error) };
    },
  };
}

function plainJsonSchema(schema: JsonSchemaObject, toolName: string): CompiledInputSchema {
  const looksLikeSchema = ['type', 'properties', 'anyOf', 'oneOf', 'allOf', '$ref', 'enum', 'const'].some(
    (key) => key in schema,
  );
  if (!looksLikeSchema) {
    throw new ConfigError(`Tool ${toolName}'s input schema is not a schema countersign can read.`, {
      hint: 'Use zod, a Standard Schema, jsonSchema({...}) from "ai", or a JSON Schema object with a "type", e.g. { type: "object", properties: { text: { type: "string" } } }.',
    });
  }
  return jsonSchemaValidator(schema, toolName);
}

function jsonSchemaValidator(schema: JsonSchemaObject, toolName: string): CompiledInputSchema {
  const check = compileJsonSchema(schema, toolName);
  const { $schema: _dialect, ...jsonSchema } = schema;
  return {
    kind: 'json-schema',
    jsonSchema,
    async validate(value) {
      return check(value);
    },
  };
}

function jsonSchemaOf(read: () => unknown, toolName: string): JsonSchemaObject {
  let value: unknown;
  try {
    value = read();
  } catch (cause) {
    throw new ConfigError(
      `Tool ${toolName}'s input schema cannot be turned into JSON Schema for the model: ${(cause as Error).message}`,
      {
        hint: 'Use zod, or a schema library that implements Standard JSON Schema, or give a JSON Schema.',
        cause,
      },
    );
  }
  if (typeof (value as PromiseLike<unknown> | null)?.then === 'function') {
    throw new ConfigError(`Tool ${toolName}'s JSON Schema is only available asynchronously.`, {
      hint: 'Resolve it first and pass jsonSchema(resolvedSchema): the agent sends the tools with every model call.',
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`Tool ${toolName}'s input schema did not produce a JSON Schema object.`);
  }
  const { $schema: _dialect, ...schema } = value as JsonSchemaObject;
  return schema;
}

function describeIssue(path: ReadonlyArray<PropertyKey>, message: string): string {
  return `${path.length ? path.map(String).join('.') : '(arguments)'}: ${message}`;
}

/** Validation errors from zod, Standard Schema or the AI SDK's TypeValidationError. */
function issuesOf(error: unknown): string[] {
  const issues =
    (error as { issues?: unknown; cause?: unknown } | null)?.issues ??
    (error as { cause?: unknown } | null)?.cause;
  if (Array.isArray(issues)) {
    return issues.map((issue: { message?: unknown; path?: unknown }) =>
      describeIssue(Array.isArray(issue.path) ? (issue.path as PropertyKey[]) : [], String(issue.message)),
    );
  }
  return [error instanceof Error ? error.message : String(error)];
}
