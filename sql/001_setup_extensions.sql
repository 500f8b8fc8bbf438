--
-- 001_setup_extensions: install pgss_ng next to pg_stat_statements (the reference),
-- check that both run with the same settings, that pgss_ng's view has the
-- columns of pg_stat_statements 1.12 (same order and types) on every server
-- version, NULL where the server cannot measure them, then its own
-- (errors, error_exec_time), that pgss_ng_detail has the same columns
-- and then the times kept beside the counters (last_executed, quantiles,
-- CPU times), and create the helpers the later tests use:
--   pgss_ng_diff               rows on which pgss_ng and pg_stat_statements
--                              disagree, execution times included
--                              (expected empty everywhere)
--   wait_for_other_backends()  waits until this is the only client backend
--   is_planned_statement(), same_exec_time(): used by pgss_ng_diff
--
-- Expected output: expected/001_setup_extensions.out on every server version.
--
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION pgss_ng;

-- same settings for both (pgss_ng.save and pgss_ng.track_cpu are
-- pgss_ng's only extra GUCs)
SELECT name, setting, context FROM pg_settings
WHERE name LIKE 'pgss\_ng.%' OR name LIKE 'pg\_stat\_statements.%'
ORDER BY name COLLATE "C";

-- pgss_ng's first 52 columns are those of pg_stat_statements 1.12
-- (PostgreSQL 18), names and types in order, on every server version
-- (the list as PostgreSQL 18.6's pg_stat_statements--1.11--1.12.sql has
-- it): the differences
CREATE TEMP TABLE pgss_1_12 (attnum int, attname name, typ text);
INSERT INTO pgss_1_12 VALUES
  (1, 'userid', 'oid'),
  (2, 'dbid', 'oid'),
  (3, 'toplevel', 'boolean'),
  (4, 'queryid', 'bigint'),
  (5, 'query', 'text'),
  (6, 'plans', 'bigint'),
  (7, 'total_plan_time', 'double precision'),
  (8, 'min_plan_time', 'double precision'),
  (9, 'max_plan_time', 'double precision'),
  (10, 'mean_plan_time', 'double precision'),
  (11, 'stddev_plan_time', 'double precision'),
  (12, 'calls', 'bigint'),
  (13, 'total_exec_time', 'double precision'),
  (14, 'min_exec_time', 'double precision'),
  (15, 'max_exec_time', 'double precision'),
  (16, 'mean_exec_time', 'double precision'),
  (17, 'stddev_exec_time', 'double precision'),
  (18, 'rows', 'bigint'),
  (19, 'shared_blks_hit', 'bigint'),
  (20, 'shared_blks_read', 'bigint'),
  (21, 'shared_blks_dirtied', 'bigint'),
  (22, 'shared_blks_written', 'bigint'),
  (23, 'local_blks_hit', 'bigint'),
  (24, 'local_blks_read', 'bigint'),
  (25, 'local_blks_dirtied', 'bigint'),
  (26, 'local_blks_written', 'bigint'),
  (27, 'temp_blks_read', 'bigint'),
  (28, 'temp_blks_written', 'bigint'),
  (29, 'shared_blk_read_time', 'double precision'),
  (30, 'shared_blk_write_time', 'double precision'),
  (31, 'local_blk_read_time', 'double precision'),
  (32, 'local_blk_write_time', 'double precision'),
  (33, 'temp_blk_read_time', 'double precision'),
  (34, 'temp_blk_write_time', 'double precision'),
  (35, 'wal_records', 'bigint'),
  (36, 'wal_fpi', 'bigint'),
  (37, 'wal_bytes', 'numeric'),
  (38, 'wal_buffers_full', 'bigint'),
  (39, 'jit_functions', 'bigint'),
  (40, 'jit_generation_time', 'double precision'),
  (41, 'jit_inlining_count', 'bigint'),
  (42, 'jit_inlining_time', 'double precision'),
  (43, 'jit_optimization_count', 'bigint'),
  (44, 'jit_optimization_time', 'double precision'),
  (45, 'jit_emission_count', 'bigint'),
  (46, 'jit_emission_time', 'double precision'),
  (47, 'jit_deform_count', 'bigint'),
  (48, 'jit_deform_time', 'double precision'),
  (49, 'parallel_workers_to_launch', 'bigint'),
  (50, 'parallel_workers_launched', 'bigint'),
  (51, 'stats_since', 'timestamp with time zone'),
  (52, 'minmax_stats_since', 'timestamp with time zone');
SELECT coalesce(n.attnum, r.attnum) AS attnum, n.attname AS pgss_ng,
       r.attname AS pgss_1_12, n.atttypid::regtype AS ng_type, r.typ
FROM (SELECT attnum, attname, atttypid FROM pg_attribute
      WHERE attrelid = 'pgss_ng'::regclass AND attnum BETWEEN 1 AND 52) n
FULL JOIN pgss_1_12 r ON n.attnum = r.attnum
WHERE n.attname IS DISTINCT FROM r.attname
   OR n.atttypid::regtype::text IS DISTINCT FROM r.typ
ORDER BY 1;

-- pgss_ng's own columns come after them
SELECT attnum, attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng'::regclass AND attnum > 52 ORDER BY attnum;

-- pgss_ng_detail: pgss_ng's columns (the ones that differ: none), then
-- the times
SELECT attnum, n.attname, n.atttypid::regtype, d.attname, d.atttypid::regtype
FROM (SELECT * FROM pg_attribute WHERE attrelid = 'pgss_ng'::regclass
      AND attnum > 0) n
JOIN (SELECT * FROM pg_attribute WHERE attrelid = 'pgss_ng_detail'::regclass
      AND attnum > 0) d USING (attnum)
WHERE (n.attname, n.atttypid) IS DISTINCT FROM (d.attname, d.atttypid);
SELECT attnum, attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng_detail'::regclass
  AND attnum > (SELECT max(attnum) FROM pg_attribute
                WHERE attrelid = 'pgss_ng'::regclass)
ORDER BY attnum;

-- every column of the server's own pg_stat_statements (1.10 on 15 and 16,
-- 1.11 on 17, 1.12 on 18) is one of pgss_ng's, with the same type; 1.10's
-- blk_read_time and blk_write_time are shared_blk_read_time and
-- shared_blk_write_time: the columns that are not
SELECT r.attname, r.atttypid::regtype FROM pg_attribute r
WHERE r.attrelid = 'pg_stat_statements'::regclass AND r.attnum > 0
  AND NOT EXISTS (
    SELECT FROM pg_attribute n
    WHERE n.attrelid = 'pgss_ng'::regclass AND n.atttypid = r.atttypid
      AND n.attname = CASE r.attname
                        WHEN 'blk_read_time' THEN 'shared_blk_read_time'
                        WHEN 'blk_write_time' THEN 'shared_blk_write_time'
                        ELSE r.attname END);
DROP TABLE pgss_1_12;

SELECT attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng_info'::regclass AND attnum > 0 ORDER BY attnum;
-- the wait-event profile (1.1), and the wait time columns of the evicted
-- remainder
SELECT attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng_waits'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng_evicted'::regclass AND attname LIKE 'wait\_%'
ORDER BY attnum;

-- Rows of one view that the other does not have, on every column the two
-- must agree on: the key, the text, plans, calls, rows and the block/WAL
-- counters.  EXCEPT ALL compares multisets and treats NULLs as equal, so
-- this also works for readers that see "<insufficient privilege>" rows
-- with a NULL queryid.  Entries whose executions all failed (plans =
-- calls = 0, errors > 0) are pgss_ng's own: pg_stat_statements has no
-- trace of them.  Then the keys (with a queryid) whose execution times
-- disagree ('exec time differs', pgss_ng's row):
--   * a planned statement (is_planned_statement()) is timed by both
--     from the same executor instrumentation: total, mean and stddev must
--     be equal up to rounding (relative 1e-9; stddev also 1e-6 ms
--     absolute), and min and max too unless pgss_ng restarted them
--     (minmax_only reset);
--   * a utility statement is timed by each extension around its own
--     ProcessUtility hook, and pgss_ng's (loaded last) calls
--     pg_stat_statements' from inside: its total, min and max must only
--     be at least pg_stat_statements'.
-- Planning times are not compared: each extension times its own planner
-- hook, the same way.

-- Is q the text of a planned statement (one the executor hooks time)?
-- Its first keyword (after leading comments): SELECT but not SELECT INTO
-- (CREATE TABLE AS), INSERT, UPDATE, DELETE, MERGE, WITH, VALUES, TABLE,
-- or PREPARE (neither extension counts PREPARE and EXECUTE as utility
-- statements: a prepared query's executions go to the PREPARE's text).
-- A text shared by a utility statement and the query it runs (COPY
-- (SELECT ...) TO, EXPLAIN, CREATE TABLE AS, DECLARE) counts as utility.
CREATE FUNCTION is_planned_statement(q text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT t ~* '^(SELECT|INSERT|UPDATE|DELETE|MERGE|WITH|VALUES|TABLE|PREPARE)\M'
         AND t !~* '^SELECT\M.*\mINTO\M'
  FROM regexp_replace(q, '^(\s|/\*([^*]|\*+[^*/])*\*+/|--[^\n]*\n)*', '') t
$$;

-- Are two times equal, to a relative 1e-9 plus abs_ms?
CREATE FUNCTION same_exec_time(a float8, b float8, abs_ms float8 DEFAULT 0)
RETURNS boolean LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT abs(a - b) <= 1e-9 * greatest(abs(a), abs(b)) + abs_ms
$$;

SELECT q, is_planned_statement(q) FROM (VALUES
  ('SELECT 1'), (E'/* a */ -- b\n  select 1'), ('WITH w AS (SELECT 1) TABLE w'),
  ('INSERT INTO t VALUES (1)'), ('PREPARE p AS SELECT $1'),
  ('SELECT a INTO t2 FROM t'), ('COPY (SELECT 1) TO STDOUT'),
  ('EXPLAIN SELECT 1'), ('SET work_mem = 64'), ('CALL p()')) v(q);

CREATE VIEW pgss_ng_diff AS
WITH ng AS (
  SELECT userid, dbid, toplevel, queryid, query, plans, calls, rows,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, local_blks_hit, local_blks_read,
         local_blks_dirtied, local_blks_written, temp_blks_read,
         temp_blks_written, wal_records, wal_fpi, wal_bytes
  FROM pgss_ng WHERE plans + calls > 0),
ref AS (
  SELECT userid, dbid, toplevel, queryid, query, plans, calls, rows,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, local_blks_hit, local_blks_read,
         local_blks_dirtied, local_blks_written, temp_blks_read,
         temp_blks_written, wal_records, wal_fpi, wal_bytes
  FROM pg_stat_statements)
(SELECT 'only in pgss_ng' AS side, * FROM (TABLE ng EXCEPT ALL TABLE ref) d)
UNION ALL
(SELECT 'only in pg_stat_statements' AS side, * FROM (TABLE ref EXCEPT ALL TABLE ng) d)
UNION ALL
(SELECT 'exec time differs' AS side, n.userid, n.dbid, n.toplevel, n.queryid,
        n.query, n.plans, n.calls, n.rows, n.shared_blks_hit,
        n.shared_blks_read, n.shared_blks_dirtied, n.shared_blks_written,
        n.local_blks_hit, n.local_blks_read, n.local_blks_dirtied,
        n.local_blks_written, n.temp_blks_read, n.temp_blks_written,
        n.wal_records, n.wal_fpi, n.wal_bytes
 FROM pgss_ng n
 JOIN pg_stat_statements r ON (r.userid, r.dbid, r.toplevel, r.queryid) =
                              (n.userid, n.dbid, n.toplevel, n.queryid)
 WHERE n.calls > 0 AND n.calls = r.calls
   AND CASE WHEN is_planned_statement(n.query) THEN
         NOT (same_exec_time(n.total_exec_time, r.total_exec_time)
              AND same_exec_time(n.mean_exec_time, r.mean_exec_time)
              AND same_exec_time(n.stddev_exec_time, r.stddev_exec_time, 1e-6)
              AND (n.minmax_stats_since > n.stats_since
                   OR (same_exec_time(n.min_exec_time, r.min_exec_time)
                       AND same_exec_time(n.max_exec_time, r.max_exec_time))))
       ELSE
         n.total_exec_time < r.total_exec_time * (1 - 1e-9)
         OR (n.minmax_stats_since = n.stats_since
             AND (n.min_exec_time < r.min_exec_time
                  OR n.max_exec_time < r.max_exec_time))
       END);

GRANT SELECT ON pgss_ng_diff TO PUBLIC;

-- Wait (at most 30 s) until no other client backend exists, so that every
-- pending pgss_ng count of earlier sessions has been flushed at their exit.
-- Call it only with track = top: its nested statements loop a variable
-- number of times.
CREATE FUNCTION wait_for_other_backends() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT FROM pg_stat_activity
                   WHERE backend_type = 'client backend'
                     AND pid <> pg_backend_pid()) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;

-- A first look: reset both, run a few statements, compare.
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 1 AS one;
SELECT 2 AS one;
SELECT 'a' || 'b' AS ab;
SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- Where the server cannot measure a column it is NULL on every row, never
-- 0; where it can, never NULL.  Per column the first server version that
-- measures it (shared_blk_read_time and wal_bytes: every version).
SELECT c.col, c.since, count(*) > 0 AS has_entries,
       count(*) FILTER (WHERE to_jsonb(p) ->> c.col IS NULL) =
         CASE WHEN current_setting('server_version_num')::int >= c.since * 10000
              THEN 0 ELSE count(*) END AS null_iff_not_measured
FROM (VALUES ('shared_blk_read_time', 15), ('shared_blk_write_time', 15),
             ('local_blk_read_time', 17), ('local_blk_write_time', 17),
             ('wal_bytes', 15), ('wal_buffers_full', 18),
             ('jit_deform_count', 17), ('jit_deform_time', 17),
             ('parallel_workers_to_launch', 18),
             ('parallel_workers_launched', 18)) c(col, since)
CROSS JOIN pgss_ng p
GROUP BY c.col, c.since
ORDER BY c.since, c.col COLLATE "C";
