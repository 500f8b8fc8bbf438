--
-- 009_qtext_showtext: pgss_ng(false) returns the same rows as pgss_ng(true) with
-- every query NULL (queryid still shown), as pg_stat_statements(false).
--
-- Expected output: expected/009_qtext_showtext.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 1 AS st_a;
SELECT 'x' || 'y' AS st_b;
SELECT 'z' || 'w' AS st_b;

SELECT count(*) AS entries, count(query) AS with_text,
       count(queryid) AS with_queryid
FROM pgss_ng(false);

-- the same rows and counts as the showtext form
SELECT t.calls, t.rows, f.query IS NULL AS no_text, t.query
FROM pgss_ng(true) t
FULL JOIN pgss_ng(false) f
  ON t.userid = f.userid AND t.dbid = f.dbid AND t.queryid = f.queryid
     AND t.toplevel = f.toplevel AND t.calls = f.calls AND t.rows = f.rows
ORDER BY t.query COLLATE "C";

-- the same as pg_stat_statements(false)
(SELECT 'only in pgss_ng' AS side, userid, dbid, toplevel, queryid, query,
        calls, rows, plans FROM pgss_ng(false)
 EXCEPT ALL
 SELECT 'only in pgss_ng', userid, dbid, toplevel, queryid, query,
        calls, rows, plans FROM pg_stat_statements(false))
UNION ALL
(SELECT 'only in pg_stat_statements', userid, dbid, toplevel, queryid,
        query, calls, rows, plans FROM pg_stat_statements(false)
 EXCEPT ALL
 SELECT 'only in pg_stat_statements', userid, dbid, toplevel, queryid,
        query, calls, rows, plans FROM pgss_ng(false));
SELECT * FROM pgss_ng_diff;
