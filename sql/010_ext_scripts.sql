--
-- 010_ext_scripts: with track = all, every statement of an extension
-- script (one long multi-statement source text: comments, constants,
-- utility statements, SQL function bodies) is a nested entry.  Real
-- scripts of three contrib extensions must give exactly pg_stat_statements'
-- entries, texts and counts (pgss_ng_diff is empty).
--
-- Expected output: expected/010_ext_scripts.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
CREATE EXTENSION hstore;
CREATE EXTENSION citext;
CREATE EXTENSION pg_trgm;
DROP EXTENSION hstore, citext, pg_trgm;
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);

-- the top-level statements
SELECT calls, rows, query FROM pgss_ng WHERE toplevel
ORDER BY query COLLATE "C";
-- the scripts' statements were tracked, nested
SELECT count(*) > 100 AS many_nested, bool_and(calls >= 1) AS all_called
FROM pgss_ng WHERE NOT toplevel;
SELECT count(*) AS nested_texts_of_another_statement FROM pgss_ng
WHERE NOT toplevel AND (query LIKE 'CREATE EXTENSION%' OR query = '');
SELECT * FROM pgss_ng_diff;
