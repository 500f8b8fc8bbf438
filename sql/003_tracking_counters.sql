--
-- 003_tracking_counters: calls and rows of SELECT, INSERT, UPDATE, DELETE, MERGE,
-- COPY (both directions), FETCH, CREATE TABLE AS / SELECT INTO /
-- materialized views, statements that fail (no call; their failures
-- are pgss_ng's own errors column, see 012_failures_errors), statements
-- using temporary and local blocks and a parallel plan, and plans with
-- track_planning on (one per planning: each simple query, once for a
-- generic plan, each execution for custom plans).  Everything must equal
-- pg_stat_statements (pgss_ng_diff is empty).
--
-- Expected output: expected/003_tracking_counters.out on PostgreSQL 15; _1.out on
--   16 (the constants of utility statements are normalized); _2.out on 17
--   (also DEALLOCATE's name); _3.out on 18 (also SET values).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

CREATE TABLE cnt_t (id int PRIMARY KEY, v text);

-- INSERT: rows affected, summed over calls
INSERT INTO cnt_t SELECT g, 'v' || g FROM generate_series(1, 20) g;
INSERT INTO cnt_t SELECT g, 'v' || g FROM generate_series(21, 25) g;
INSERT INTO cnt_t VALUES (100, 'x') RETURNING id;
INSERT INTO cnt_t VALUES (100, 'y') ON CONFLICT DO NOTHING;

-- SELECT: rows returned
SELECT count(*) FROM cnt_t;
SELECT id FROM cnt_t WHERE id <= 3 ORDER BY id;
SELECT id FROM cnt_t WHERE id <= 5 ORDER BY id;
SELECT id FROM cnt_t WHERE id < 0;

-- UPDATE / DELETE / MERGE: rows affected
UPDATE cnt_t SET v = 'even' WHERE id % 2 = 0;
DELETE FROM cnt_t WHERE id > 20 RETURNING id;
MERGE INTO cnt_t t USING (VALUES (1), (2), (50)) s(id) ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET v = 'merged'
  WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'new');

-- a failing statement is not counted in calls (it shows with calls 0)
SELECT 1 / (id - id) FROM cnt_t;

-- COPY: rows copied
COPY (SELECT id, v FROM cnt_t WHERE id <= 3 ORDER BY id) TO STDOUT;
COPY cnt_t (id, v) FROM STDIN;
201	a
202	b
203	c
\.

-- FETCH: rows fetched; each FETCH text is an entry of its own
BEGIN;
DECLARE cnt_c CURSOR FOR SELECT id FROM cnt_t ORDER BY id;
FETCH 2 FROM cnt_c;
FETCH 3 FROM cnt_c;
FETCH 2 FROM cnt_c;
MOVE 5 IN cnt_c;
CLOSE cnt_c;
COMMIT;

-- utility statements that produce rows
CREATE TABLE cnt_ctas AS SELECT * FROM cnt_t WHERE id <= 4;
SELECT * INTO cnt_into FROM cnt_t WHERE id <= 2;
CREATE MATERIALIZED VIEW cnt_mv AS SELECT id FROM cnt_t WHERE id <= 6;
REFRESH MATERIALIZED VIEW cnt_mv;

-- temporary blocks (a sort that spills), local blocks (a temporary
-- table), a parallel plan: one call each, the same block counts as
-- pg_stat_statements (pgss_ng_diff compares them)
SET work_mem = '64kB';
SELECT count(*) FROM (SELECT g FROM generate_series(1, 20000) g ORDER BY g DESC) s;
RESET work_mem;
CREATE TEMP TABLE cnt_tmp AS SELECT g AS a FROM generate_series(1, 500) g;
SELECT sum(a) FROM cnt_tmp;
-- The parallel plan: a Gather on top of every parallel-safe plan, its
-- worker running the scan.  The setting is debug_parallel_query from
-- PostgreSQL 16, force_parallel_mode before; set_config() keeps the
-- recorded text the same on every version.
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
                  'on', false) AS parallel;
SELECT count(*) FROM cnt_t WHERE v <> 'none';
-- a worker really ran it: the same statement under EXPLAIN ANALYZE
CREATE FUNCTION cnt_workers_launched(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO j;
  RETURN (j -> 0 -> 'Plan' ->> 'Workers Launched')::int;
END $$;
SELECT cnt_workers_launched($q$SELECT count(*) FROM cnt_t WHERE v <> 'none'$q$);
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END,
                  'off', false) AS parallel;
DROP FUNCTION cnt_workers_launched(text);
DROP TABLE cnt_tmp;

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;
-- the block counters really were exercised
SELECT query, temp_blks_written > 0 AS temp_blks, local_blks_hit > 0 AS local_blks
FROM pgss_ng WHERE query LIKE '%FROM (SELECT g%' OR query LIKE '%FROM cnt_tmp%'
ORDER BY query COLLATE "C";
-- and the parallel one launched its worker as planned (the columns are
-- PostgreSQL 18's; NULL before, where the EXPLAIN above is the check)
SELECT query, calls,
       coalesce(parallel_workers_to_launch = 1 AND parallel_workers_launched = 1,
                current_setting('server_version_num')::int < 180000
                  AND parallel_workers_launched IS NULL) AS workers_ran
FROM pgss_ng WHERE query LIKE 'SELECT count(*) FROM cnt_t WHERE v%';

-- planning counts
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SET pgss_ng.track_planning = on;
SET pg_stat_statements.track_planning = on;

SELECT v FROM cnt_t WHERE id = 1;
SELECT v FROM cnt_t WHERE id = 2;
SELECT v FROM cnt_t WHERE id = 3;

-- planned, then failing in execution: a plan, no call
SELECT 1 / (id - id) FROM cnt_t;

-- a generic plan is made once, custom plans at every execution
PREPARE cnt_p(int) AS SELECT id, v FROM cnt_t WHERE id = $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE cnt_p(1);
EXECUTE cnt_p(2);
EXECUTE cnt_p(3);
DEALLOCATE cnt_p;
PREPARE cnt_p2(int) AS SELECT v, id FROM cnt_t WHERE id = $1;
SET plan_cache_mode = force_custom_plan;
EXECUTE cnt_p2(1);
EXECUTE cnt_p2(2);
DEALLOCATE cnt_p2;
RESET plan_cache_mode;

-- (the reading statement itself is shown: planned, not yet executed)
SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

SET pgss_ng.track_planning = off;
SET pg_stat_statements.track_planning = off;
DROP MATERIALIZED VIEW cnt_mv;
DROP TABLE cnt_t, cnt_ctas, cnt_into;
