import { ConfigError } from '../../core/errors/config-error.ts';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.ts';

/**
 * Splits a COUNTERSIGN_STORE postgres:// URL into what pg is given and the schema: a
 * `schema` query parameter wins over COUNTERSIGN_PG_SCHEMA, which wins over the default.
 * The parameter is cut out of the text as it is; every other byte reaches pg unchanged
 * (re-serializing the URL would re-encode passwords and socket paths).
 */
export function parsePostgresSpec(
  spec: string,
  env: Record<string, string | undefined>,
): { connectionString: string; schema: string } {
  const queryStart = spec.indexOf('?');
  const base = queryStart === -1 ? spec : spec.slice(0, queryStart);
  const segments = queryStart === -1 ? [] : spec.slice(queryStart + 1).split('&');
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text.replaceAll('+', ' '));
    } catch {
      throw new ConfigError(`COUNTERSIGN_STORE has a malformed query parameter "${text}".`);
    }
  };
  const schemas: string[] = [];
  const kept = segments.filter((segment) => {
    const [key = '', value = ''] = segment.split(/=(.*)/s);
    if (decode(key) !== 'schema') return true;
    schemas.push(decode(value));
    return false;
  });
  if (schemas.length > 1) {
    throw new ConfigError('COUNTERSIGN_STORE names the schema more than once.', {
      hint: 'Give ?schema=NAME once.',
    });
  }
  const fromEnv = env.COUNTERSIGN_PG_SCHEMA?.trim();
  const schema = schemas[0] ?? (fromEnv === undefined || fromEnv === '' ? DEFAULT_SCHEMA : fromEnv);
  return {
    connectionString: kept.length === 0 ? base : `${base}?${kept.join('&')}`,
    schema: assertSchemaName(schema),
  };
}
