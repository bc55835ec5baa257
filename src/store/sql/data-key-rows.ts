import type { DataKeyRecord } from '../ports/data-keys.ts';
import { type Row, text, textOrNull } from '../row-readers.ts';

export const DATA_KEY_COLUMNS = 'id, owner, kek_id, wrapped, created_at, forgotten_at';

export function toDataKey(row: Row): DataKeyRecord {
  const where = `data_keys(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    owner: text(row, 'owner', where),
    kekId: textOrNull(row, 'kek_id', where),
    wrapped: textOrNull(row, 'wrapped', where),
    createdAt: text(row, 'created_at', where),
    forgottenAt: textOrNull(row, 'forgotten_at', where),
  };
}

export function dataKeyValues(key: DataKeyRecord): Array<string | null> {
  return [key.id, key.owner, key.kekId, key.wrapped, key.createdAt, key.forgottenAt];
}
