import type { DataKeyRecord, DataKeys } from '../ports/data-keys.ts';

/** Process-local wrapped data keys, for the memory Store. */
export function createMemoryDataKeys(): DataKeys {
  const byId = new Map<string, DataKeyRecord>();
  const live = (owner: string) =>
    [...byId.values()].find((key) => key.owner === owner && key.wrapped !== null) ?? null;
  return {
    async getDataKey(id) {
      const key = byId.get(id);
      return key === undefined ? null : { ...key };
    },
    async liveDataKey(owner) {
      const key = live(owner);
      return key === null ? null : { ...key };
    },
    async insertDataKey(key) {
      const existing = live(key.owner);
      if (existing !== null) return { ...existing };
      byId.set(key.id, { ...key });
      return { ...key };
    },
    async rewrapDataKey(id, fromKekId, kekId, wrapped) {
      const key = byId.get(id);
      if (key === undefined || key.wrapped === null || key.kekId !== fromKekId) return false;
      byId.set(id, { ...key, kekId, wrapped });
      return true;
    },
    async forgetDataKeys(owner, at) {
      const ids: string[] = [];
      for (const key of byId.values()) {
        if (key.owner !== owner || key.wrapped === null) continue;
        byId.set(key.id, { ...key, kekId: null, wrapped: null, forgottenAt: at });
        ids.push(key.id);
      }
      return ids;
    },
    async listLiveDataKeys({ afterId, limit }) {
      return [...byId.values()]
        .filter((key) => key.wrapped !== null && (afterId === undefined || key.id > afterId))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, limit)
        .map((key) => ({ ...key }));
    },
  };
}
