-- text search (number 016 in the merge plan, as SQLite's migration of the same name): a
-- partial text match (`text`: the effect preview or the customer; `customer`) is found through
-- trigram indexes (pg_trgm, GIN) when the needle is rare, instead of walking the list until a
-- page is full. The statement is the walk's (request-page-sql.ts); the planner picks the
-- index or the walk from the statistics of the indexed expressions, which is why both are
-- plain expression indexes: PostgreSQL keeps statistics for an expression index's
-- expressions, not for a partial index's. The effect's expression is null where the preview
-- is sealed (encryption at rest), so ciphertext is neither matched nor indexed
-- (request-page-sql.ts: searchableEffect builds the same expression for the query). A small
-- pending list keeps what a search scans besides the index short (the default is 4 MB).
--
-- CREATE EXTENSION needs a privilege a managed database may not grant (CREATE on the
-- database for pg_trgm, a trusted extension from PostgreSQL 13; a superuser before), and a
-- database may not offer pg_trgm at all. Then this migration still succeeds and builds no
-- index: text search walks the list as before, and the store says why once it opens
-- (text-search.ts). The attempt is a function so that a later start can make it again, once
-- an administrator has installed pg_trgm (in any schema; it is installed in `public` here).
-- It returns null when the indexes exist, else the reason they do not.
CREATE FUNCTION text_search_indexes() RETURNS text LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  trgm text;
BEGIN
  SELECT n.nspname INTO trgm FROM pg_catalog.pg_extension e
    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  IF trgm IS NULL THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
    EXCEPTION WHEN OTHERS THEN
      -- Another store's migration may have installed it meanwhile (a unique violation here).
      SELECT n.nspname INTO trgm FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
      IF trgm IS NULL THEN
        RETURN format('pg_trgm is not installed and this role could not install it: %s', SQLERRM);
      END IF;
    END;
    SELECT n.nspname INTO trgm FROM pg_catalog.pg_extension e
      JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  END IF;
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS approvals_effect_trgm ON approvals USING gin '
    '((CASE WHEN substr(effect, 1, 5) = %L THEN NULL ELSE lower(effect COLLATE "C") END) %I.gin_trgm_ops) '
    'WITH (gin_pending_list_limit = 64)',
    'cs1t:', trgm);
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS approvals_customer_trgm ON approvals USING gin '
    '(lower(customer COLLATE "C") %I.gin_trgm_ops) WITH (gin_pending_list_limit = 64)',
    trgm);
  -- The planner's choice needs the expressions' statistics now, not at the next autovacuum,
  -- where requests wait already. (An empty table is left unanalyzed, as before: analyzed
  -- empty, the planner would trust "no rows" until autovacuum comes by.)
  IF EXISTS (SELECT 1 FROM approvals) THEN
    ANALYZE approvals;
  END IF;
  RETURN NULL;
EXCEPTION WHEN insufficient_privilege THEN
  -- A role that uses a schema its owner migrated may not build indexes on its tables.
  RETURN format('the trigram indexes could not be built: %s', SQLERRM);
END $$;
SELECT text_search_indexes();
