--
-- 031_reads_rows: the rows of pgss_ng and pgss_ng_detail as a read builds
-- them (src/views/rowform.c lays each row out itself, and an assertion-enabled
-- build compares every row with heap_form_tuple's bytes).  Texts on
-- either side of 127 bytes (the longest that a one-byte varlena header
-- holds: shorter texts are packed, longer ones aligned), a text of 3,000
-- bytes, a multibyte text, no text (pgss_ng(false)) and
-- "<insufficient privilege>" with a NULL queryid go through it, and the
-- columns after them come out intact: each text is exactly its
-- statement's, every column pg_stat_statements also has agrees with it
-- (pgss_ng_diff), a whole-row reference gives back every column of the
-- row, and an unprivileged role's hidden rows carry the calls the
-- superuser sees in them.  pgss_ng_detail has the rows of pgss_ng, and
-- the last execution of each statement run here.
--
-- Expected output: expected/031_reads_rows.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
CREATE ROLE regress_pgss_ng_rows;
-- statements of i columns (different queryids) whose normalized texts are
-- len bytes long: "SELECT /*rr_xxx...*/ $1, $2, ..."
CREATE TEMP TABLE rr_len AS
SELECT i, len, 'SELECT /*rr_' || repeat('x', len - 15 - length(cols)) ||
               '*/ ' || cols AS normalized
FROM (SELECT i, len,
             (SELECT string_agg('$' || k, ', ') FROM generate_series(1, i) k)
               AS cols
      FROM unnest(ARRAY[20, 125, 126, 127, 128, 129, 3000])
             WITH ORDINALITY AS l(len, i)) s;

\set ECHO none
\o /dev/null
SELECT regexp_replace(normalized, '\$[0-9]+', '1', 'g') FROM rr_len \gexec
SELECT regexp_replace(normalized, '\$[0-9]+', '1', 'g') FROM rr_len \gexec
SELECT 'héllo wörld' AS "rr_ü";
\o
\set ECHO all
SET ROLE regress_pgss_ng_rows;
SELECT 1 AS rr_own;
RESET ROLE;

-- each text exactly its statement's (normalized), with the counts after it
SELECT i, len, octet_length(p.query) AS text_bytes, p.calls, p.rows
FROM rr_len LEFT JOIN pgss_ng p ON p.query = rr_len.normalized
ORDER BY i;
SELECT query, calls FROM pgss_ng WHERE query LIKE '%rr_ü%';
SELECT * FROM pgss_ng_diff;

-- a whole-row reference gives back every column of each row
SELECT count(*) AS rows,
       count(*) FILTER (WHERE (to_jsonb(p) - 'query') =
         (SELECT to_jsonb(q) - 'query' FROM pgss_ng(false) q
          WHERE q.userid = p.userid AND q.dbid = p.dbid
            AND q.queryid = p.queryid AND q.toplevel = p.toplevel))
         AS same_as_text_free_row,
       count(*) FILTER (WHERE to_jsonb(p) ->> 'query' = p.query) AS same_text,
       count(*) FILTER (WHERE (to_jsonb(p) ->> 'calls')::bigint = p.calls
                          AND (to_jsonb(p) ->> 'stats_since')::timestamptz
                                = p.stats_since
                          AND (to_jsonb(p) ->> 'error_exec_time')::float8
                                = p.error_exec_time) AS same_values
FROM pgss_ng p WHERE p.query LIKE '%rr\_%';

-- pgss_ng_detail: the rows of pgss_ng, column for column, and the times;
-- the statements run here have a last execution and quantiles, no plan
-- quantiles (track_planning off)
SELECT count(*) AS rows, count(d.last_executed) AS last_executed,
       count(*) FILTER (WHERE d.exec_time_p50 > 0
                          AND d.exec_time_p50 <= d.exec_time_p999)
         AS exec_quantiles,
       count(d.plan_time_p50) AS plan_quantiles,
       count(d.exec_user_time) AS cpu_times,
       count(*) FILTER (WHERE to_jsonb(p) = (SELECT jsonb_object_agg(k, v)
                                              FROM jsonb_each(to_jsonb(d)) e(k, v)
                                              WHERE to_jsonb(p) ? k))
         AS same_as_pgss_ng
FROM pgss_ng p
JOIN pgss_ng_detail d USING (userid, dbid, toplevel, queryid)
WHERE p.query LIKE '%rr\_%';
SELECT (SELECT count(*) FROM pgss_ng) = (SELECT count(*) FROM pgss_ng_detail)
         AS same_rows;

-- another role: other roles' rows hidden (NULL queryid, the text
-- "<insufficient privilege>"), the columns after them intact: each row has
-- the calls, plans or errors that put it in the view, and its own
-- statement's counts
SET ROLE regress_pgss_ng_rows;
SELECT userid = 'regress_pgss_ng_rows'::regrole AS own,
       count(*) = count(*) FILTER (WHERE queryid IS NULL
                                     AND query = '<insufficient privilege>')
         AS all_hidden,
       count(*) = count(*) FILTER (WHERE calls + plans + errors > 0
                                     AND stats_since <= now())
         AS counts_intact,
       count(*) = count(*) FILTER (WHERE to_jsonb(p) ->> 'query' = p.query
                                     AND (to_jsonb(p) ->> 'calls')::bigint
                                           = p.calls)
         AS whole_rows_agree
FROM pgss_ng p WHERE userid <> 'regress_pgss_ng_rows'::regrole
GROUP BY own;
SELECT calls, rows, query FROM pgss_ng
WHERE userid = 'regress_pgss_ng_rows'::regrole ORDER BY query COLLATE "C";
SELECT count(*) FILTER (WHERE queryid IS NULL) > 0 AS detail_hidden,
       count(*) FILTER (WHERE queryid IS NOT NULL) AS detail_own
FROM pgss_ng_detail;
RESET ROLE;
DROP ROLE regress_pgss_ng_rows;
