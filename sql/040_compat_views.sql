--
-- 040_compat_views: pgss_ng_compat, the objects of this server's own
-- pg_stat_statements (1.10 on 15 and 16, 1.11 on 17, 1.12 on 18) served
-- from pgss_ng's data.
--   * Refused where contrib's extension exists (here: 001_setup_extensions made it),
--     with a message that names the conflict and what to do.
--   * In a database of its own (compat_db): the same functions, views,
--     columns (names, types, order), signatures, defaults, return types,
--     language (C), volatility, strictness, security (invoker, no SET)
--     and grants as contrib's own extension created there a moment before
--     (the differences: none); its functions are pgss_ng's library's.
--   * Its rows are pgss_ng's, column by column under contrib's names
--     (1.10's blk_read_time is pgss_ng's shared_blk_read_time), except an
--     entry that only failed (calls = plans = 0); exact calls and rows;
--     no texts with showtext false, no rows with NULL.
--   * Same privacy rule and '<insufficient privilege>' text; the reset is
--     denied to PUBLIC and works for a role granted EXECUTE on it alone;
--     pg_stat_statements_info is pgss_ng_info's dealloc and stats_reset.
--   * CREATE EXTENSION pg_stat_statements next to it: fails in the same
--     schema, succeeds in another (both sets exist, search_path decides).
--   * Relocating either extension keeps the objects working.
--
-- Expected output: one expected output for every server version.
--

-- contrib's extension exists in this database: refused (the context lines
-- differ by server version)
\set SHOW_CONTEXT never
CREATE EXTENSION pgss_ng_compat;
\set SHOW_CONTEXT errors
SELECT current_database() AS regress_db \gset

CREATE DATABASE compat_db;
\c compat_db
CREATE EXTENSION pgss_ng;

-- What a client can see of the pg_stat_statements objects in schema s:
-- relations and their grants, columns (names, types, order), functions
-- (arguments with defaults, result, set-returning, language, volatility,
-- strictness, security, settings, parallel safety, grants) and their OUT
-- columns.
CREATE FUNCTION compat_facts(s name)
RETURNS TABLE (kind text, name text, detail text)
LANGUAGE sql STABLE AS $$
  SELECT 'relation', c.relname::text,
         concat_ws(' | ', c.relkind, coalesce(c.relacl::text, 'default'))
    FROM pg_class c WHERE c.relnamespace = s::regnamespace
  UNION ALL
  SELECT 'column', c.relname || '.' || a.attnum,
         a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
    FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
   WHERE c.relnamespace = s::regnamespace
  UNION ALL
  SELECT 'function', p.proname || '(' || oidvectortypes(p.proargtypes) || ')',
         concat_ws(' | ',
                   regexp_replace(pg_get_function_arguments(p.oid),
                                  '(^|, )OUT .*$', ''),
                   pg_get_function_result(p.oid), p.proretset, p.prokind,
                   (SELECT l.lanname FROM pg_language l WHERE l.oid = p.prolang),
                   p.provolatile, p.proisstrict, p.prosecdef,
                   coalesce(p.proconfig::text, 'no SET'),
                   p.proparallel, coalesce(p.proacl::text, 'default'))
    FROM pg_proc p WHERE p.pronamespace = s::regnamespace
  UNION ALL
  SELECT 'function column', p.proname || '.' || a.n,
         a.name || ' ' || format_type(a.typ, NULL)
    FROM pg_proc p,
         unnest(p.proargnames, p.proargmodes, p.proallargtypes)
           WITH ORDINALITY a(name, mode, typ, n)
   WHERE p.pronamespace = s::regnamespace AND a.mode IN ('o', 't')
$$;

-- contrib's objects, as this server's pg_stat_statements makes them
CREATE SCHEMA contrib;
CREATE EXTENSION pg_stat_statements SCHEMA contrib;
CREATE TABLE contrib_facts AS SELECT * FROM compat_facts('contrib');
DROP EXTENSION pg_stat_statements;
SELECT kind, count(*) > 0 AS some FROM contrib_facts GROUP BY kind
ORDER BY kind;

CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng_compat SCHEMA mon;
-- the differences: none
(SELECT 'only in contrib' AS side, * FROM contrib_facts
 EXCEPT SELECT 'only in contrib', * FROM compat_facts('mon'))
UNION ALL
(SELECT 'only in pgss_ng_compat', * FROM compat_facts('mon')
 EXCEPT SELECT 'only in pgss_ng_compat', * FROM contrib_facts)
ORDER BY 1, 2, 3;

SET search_path = mon, public;
SELECT pgss_ng_reset() IS NOT NULL AS reset;
CREATE TABLE compat_t (a int);
INSERT INTO compat_t VALUES (1), (2), (3);
SELECT a FROM compat_t WHERE a = 1;
SELECT a FROM compat_t WHERE a = 2;
SELECT count(*) FROM compat_t;
-- fails when planned (constants folded): an entry with calls = 0
SELECT 1 / 0 AS compat_err;

-- exact rows, as a tool reads them
SELECT calls, rows, query FROM pg_stat_statements
WHERE query NOT LIKE '%pg_stat_statements%'
ORDER BY query COLLATE "C";
-- the entry that only failed is pgss_ng's only
SELECT calls, plans, errors, query FROM pgss_ng
WHERE query LIKE '%compat_err%';
SELECT count(*) AS failed_only_rows FROM pg_stat_statements
WHERE query LIKE '%compat_err%';

-- Every compat row is the pgss_ng row of its key, column by column under
-- contrib's names: the columns that differ (none), and how many rows and
-- columns were compared.
WITH c AS (SELECT * FROM pg_stat_statements),
     n AS (SELECT * FROM pgss_ng WHERE calls > 0 OR plans > 0),
     pairs AS (
       SELECT to_jsonb(c) AS cj, to_jsonb(n) AS nj
         FROM c JOIN n USING (userid, dbid, toplevel, queryid))
SELECT e.key, e.value, p.nj FROM pairs p, jsonb_each(p.cj) e
WHERE e.value IS DISTINCT FROM
      p.nj -> CASE e.key WHEN 'blk_read_time' THEN 'shared_blk_read_time'
                         WHEN 'blk_write_time' THEN 'shared_blk_write_time'
                         ELSE e.key END;
SELECT (SELECT count(*) FROM pg_stat_statements) =
       (SELECT count(*) FROM pgss_ng WHERE calls > 0 OR plans > 0)
         AS same_rows,
       (SELECT count(*) FROM pg_stat_statements) >= 5 AS rows_compared,
       (SELECT count(*) FROM pg_attribute
         WHERE attrelid = 'pg_stat_statements'::regclass AND attnum > 0)
         >= 43 AS columns_compared;

-- showtext false: no texts; NULL: no rows
SELECT count(*) > 0 AS has_rows, count(query) AS texts
FROM pg_stat_statements(false);
SELECT count(*) AS rows_for_null FROM pg_stat_statements(NULL);

-- C functions of pgss_ng's library (no SQL body to resolve names in)
SELECT p.proname, p.probin, p.prosrc, p.prosqlbody IS NULL AS no_sql_body
FROM pg_proc p WHERE p.pronamespace = 'mon'::regnamespace ORDER BY 1;

-- An unprivileged role: its own statements in full, others' with a NULL
-- queryid and '<insufficient privilege>'; the reset denied.
CREATE ROLE regress_compat_reader;
GRANT USAGE ON SCHEMA mon TO regress_compat_reader;
GRANT SELECT ON compat_t TO regress_compat_reader;
SET ROLE regress_compat_reader;
SELECT a FROM compat_t WHERE a = 3;
SELECT userid = 'regress_compat_reader'::regrole AS own,
       queryid IS NOT NULL AS has_queryid,
       query = '<insufficient privilege>' AS hidden_text, count(*) > 0 AS some
FROM pg_stat_statements GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT calls, rows, query FROM pg_stat_statements
WHERE userid = 'regress_compat_reader'::regrole AND query LIKE '%compat_t%';
SELECT count(*) AS own_rows_as_pgss_ng_shows_them FROM (
  SELECT userid, queryid, query, calls FROM pg_stat_statements
  EXCEPT ALL
  SELECT userid, queryid, query, calls FROM pgss_ng
   WHERE calls > 0 OR plans > 0) d;
SELECT pg_stat_statements_reset();
SELECT dealloc = (SELECT dealloc FROM pgss_ng_info) AS same_dealloc,
       stats_reset = (SELECT stats_reset FROM pgss_ng_info) AS same_stats_reset
FROM pg_stat_statements_info;
RESET ROLE;

-- granted EXECUTE on the compat reset alone, it may reset one statement
GRANT EXECUTE ON FUNCTION mon.pg_stat_statements_reset TO regress_compat_reader;
SELECT queryid AS count_qid FROM pgss_ng
WHERE query = 'SELECT count(*) FROM compat_t' \gset
SET ROLE regress_compat_reader;
SELECT count(*) AS resets FROM (
  SELECT pg_stat_statements_reset(0, 0, :count_qid)) r;
RESET ROLE;
SELECT count(*) FILTER (WHERE queryid = :count_qid) AS reset_entry,
       count(*) FILTER (WHERE query LIKE 'SELECT a FROM compat_t%') AS others
FROM pgss_ng;

-- a full reset through the compat function: stats_reset moves for both
SELECT stats_reset AS before_reset FROM pgss_ng_info \gset
SELECT count(*) AS resets FROM (SELECT pg_stat_statements_reset()) r;
SELECT stats_reset > :'before_reset' AS moved,
       stats_reset = (SELECT stats_reset FROM pgss_ng_info) AS same_stats_reset
FROM pg_stat_statements_info;

-- CREATE EXTENSION pg_stat_statements next to the compat objects: in their
-- schema it fails on the first object they share; in another it is
-- created, and the first schema in search_path decides which is read.
\set SHOW_CONTEXT never
CREATE EXTENSION pg_stat_statements SCHEMA mon;
\set SHOW_CONTEXT errors
CREATE EXTENSION pg_stat_statements SCHEMA public;
SELECT e.extname, n.nspname FROM pg_extension e
JOIN pg_namespace n ON n.oid = e.extnamespace ORDER BY 1;
SELECT 'pg_stat_statements'::regclass AS read_view,
       'pg_stat_statements(boolean)'::regprocedure AS read_function;
DROP EXTENSION pg_stat_statements;

-- relocated, both keep working (their objects are bound at creation)
CREATE SCHEMA ng;
ALTER EXTENSION pgss_ng SET SCHEMA ng;
ALTER EXTENSION pgss_ng_compat SET SCHEMA public;
RESET search_path;
SELECT count(*) > 0 AS readable FROM public.pg_stat_statements;
SELECT count(*) = 1 AS readable FROM public.pg_stat_statements_info;

\c :regress_db
DROP DATABASE compat_db WITH (FORCE);
DROP ROLE regress_compat_reader;
