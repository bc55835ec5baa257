import type { PayloadCodec } from '../codec.ts';
import type { Connection, Query, Row } from './connection.ts';

/**
 * A codec that must fetch keys before it can decode (the encrypting one) gets them here,
 * between a statement and the decoding of its rows. PostgreSQL writes are often one
 * autocommit statement that returns the rows it wrote (a claim, a decision): decoding them
 * must not stop after the commit, or running the call again would claim or decide twice.
 */
export function keyLoadingConnection(connection: Connection, codec: PayloadCodec): Connection {
  const prepare = codec.prepare?.bind(codec);
  if (prepare === undefined) return connection;
  const loading =
    (q: Query): Query =>
    async (text, values, options) => {
      const rows = await q(text, values, options);
      const texts = sealedTexts(rows);
      if (texts.length > 0) await prepare(texts);
      return rows;
    };
  return {
    ...connection,
    query: loading(connection.query),
    transaction: (work, chain) => connection.transaction((q) => work(loading(q)), chain),
    snapshotRead: (work) => connection.snapshotRead((q) => work(loading(q))),
  };
}

function sealedTexts(rows: readonly Row[]): string[] {
  const texts: string[] = [];
  for (const row of rows) for (const value of Object.values(row)) collect(value, texts, 1);
  return texts;
}

/**
 * Columns, and one or two levels inside them: a statement may hand back rows of another
 * table as an array or as JSON (a decision's messages and ledger row, postgres-store.ts).
 */
function collect(value: unknown, texts: string[], depth: number): void {
  if (typeof value === 'string') {
    if (value.startsWith('cs1')) texts.push(value);
  } else if (depth < 3 && Array.isArray(value)) {
    for (const inner of value) collect(inner, texts, depth + 1);
  } else if (
    depth < 3 &&
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype
  ) {
    // Rows and JSON objects; not Buffers (bytea hashes) or Dates.
    for (const inner of Object.values(value)) collect(inner, texts, depth + 1);
  }
}
