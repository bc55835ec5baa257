-- Wrapped data keys of the encrypting codec (src/crypto/), as SQLite's migration 10: one live
-- key per owner (principal, session, run or the store), wrapped by the key-encryption key
-- named in kek_id. A forgotten key keeps its row without the key, so values naming it decode
-- as erased, not as damage.

CREATE TABLE data_keys (
  id text COLLATE "C" PRIMARY KEY,
  owner text COLLATE "C" NOT NULL,
  kek_id text COLLATE "C",
  wrapped text,
  created_at text COLLATE "C" NOT NULL,
  forgotten_at text COLLATE "C"
);
CREATE UNIQUE INDEX data_keys_live ON data_keys (owner) WHERE wrapped IS NOT NULL;
