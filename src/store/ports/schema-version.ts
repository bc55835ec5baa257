/**
 * Where a store's schema stands against the migrations this countersign carries. Only stores
 * with migrations have it (SQLite, PostgreSQL); `/readyz` asks for it, so an instance left
 * running after another one upgraded the shared schema says it is out of date instead of
 * serving on tables it does not know.
 */
export interface SchemaVersion {
  schemaVersion(): Promise<{ current: number; known: number }>;
}

export function hasSchemaVersion(value: unknown): value is SchemaVersion {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { schemaVersion?: unknown }).schemaVersion === 'function'
  );
}
