import { describe, expect, it } from 'vitest';
import { parsePostgresSpec } from './postgres-spec.ts';

describe('parsePostgresSpec', () => {
  it('takes ?schema= out and leaves every other byte for pg', () => {
    expect(
      parsePostgresSpec(
        'postgres://u:p%40ss@db.example:6432/app?sslmode=require&schema=tenant_a&host=%2Ftmp',
        {},
      ),
    ).toEqual({
      connectionString: 'postgres://u:p%40ss@db.example:6432/app?sslmode=require&host=%2Ftmp',
      schema: 'tenant_a',
    });
    expect(parsePostgresSpec('postgresql://u@h/app?schema=x', {})).toEqual({
      connectionString: 'postgresql://u@h/app',
      schema: 'x',
    });
  });

  it('falls back to COUNTERSIGN_PG_SCHEMA, then to countersign', () => {
    expect(parsePostgresSpec('postgres://u@h/app', { COUNTERSIGN_PG_SCHEMA: ' from_env ' }).schema).toBe(
      'from_env',
    );
    expect(
      parsePostgresSpec('postgres://u@h/app?schema=from_url', { COUNTERSIGN_PG_SCHEMA: 'from_env' }).schema,
    ).toBe('from_url');
    expect(parsePostgresSpec('postgres://u@h/app', { COUNTERSIGN_PG_SCHEMA: '' })).toEqual({
      connectionString: 'postgres://u@h/app',
      schema: 'countersign',
    });
  });

  it.each([
    ['postgres://u@h/app?schema=a&schema=b', /more than once/],
    ['postgres://u@h/app?schema=Upper', /schema name/],
    ['postgres://u@h/app?schema=a%22b', /schema name/],
    ['postgres://u@h/app?schema=', /schema name/],
    ['postgres://u@h/app?schema=%E0%A4%A', /malformed/],
  ])('refuses %s with CONFIG_ERROR', (spec, detail) => {
    const attempt = () => parsePostgresSpec(spec, {});
    expect(attempt).toThrow(expect.objectContaining({ code: 'CONFIG_ERROR' }));
    expect(attempt).toThrow(detail);
  });
});
