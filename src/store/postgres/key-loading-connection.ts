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
    transaction: (work) => connection.transaction((q) => work(loading(q))),
    snapshotRead: (work) => connection.snapshotRead((q) => work(loading(q))),
  };
}

function sealedTexts(rows: readonly Row[]): string[] {
  const texts: string[] = [];
  for (const row of rows) {
    for (const value of Object.values(row)) {
      if (typeof value === 'string' && value.startsWith('cs1')) texts.push(value);
    }
  }
  return texts;
}
