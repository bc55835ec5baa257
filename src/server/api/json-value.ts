import { z } from 'zod';
import type { JsonValue } from '../../core/json.ts';

/**
 * Any JSON value, in request bodies and responses. Not a recursive union: a parsed body is JSON
 * already, and a recursive schema becomes `$defs` refs that do not resolve inside an OpenAPI
 * document. The document shows it as `{}` with this description (see `openapi.ts`).
 */
export const jsonValue = z.custom<JsonValue>((value) => value !== undefined, 'A JSON value is required.');

export const JSON_VALUE_DESCRIPTION = 'Any JSON value';
