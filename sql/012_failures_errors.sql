--
-- 012_failures_errors: failed executions (errors, error_exec_time), last_executed
-- and incremental reads (pgss_ng(changed_since)), in one session.
--   * Each failure counts one error on its statement's entry, and calls
--     stays pg_stat_statements' (pgss_ng_diff is empty): division by zero
--     at planning (constants folded) and at execution, a unique
--     violation, statement_timeout (error_exec_time within 90-250 ms), an
--     error inside a transaction followed by ROLLBACK (the statements the
--     aborted transaction ignores have no queryid: not counted), failed
--     utility statements, a syntax error (no queryid: not counted).
--   * track = all: an error in a PL/pgSQL function counts on the nested
--     statement that raised and on the calling statement; one caught by an
--     EXCEPTION block counts on the nested statement only.
--   * The statements after each failure are counted exactly.
--   * last_executed (pgss_ng_detail): set by a flush with executions
--     (failed ones too), after they ran, never in the future.
--   * Incremental reads: exact sets of entries for several changed_since
--     values; the future gives nothing, NULL everything.
-- The other sessions' cases (cancel, deadlock, disconnect) are in
-- t/400_failures_errors.pl.
--
-- Expected output: expected/012_failures_errors.out on PostgreSQL 15, 16 and 17;
--   _1.out on 18 (SET values are normalized).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
CREATE TABLE err_u (k int PRIMARY KEY);
INSERT INTO err_u VALUES (1);

-- division by zero, raised by the planner (constant folding)
SELECT 1 / 0 AS err_div;
SELECT 'after' AS err_after;
-- division by zero at execution
SELECT 10 / (k - k) AS err_div_exec FROM err_u;
SELECT 'after' AS err_after;
-- unique violation, then the same statement succeeding twice
INSERT INTO err_u VALUES (1);
INSERT INTO err_u VALUES (2);
INSERT INTO err_u VALUES (3);
SELECT 'after' AS err_after;
-- statement_timeout while sleeping
SET statement_timeout = '100ms';
SELECT pg_sleep(1) AS err_sleep;
RESET statement_timeout;
SELECT 'after' AS err_after;
-- an explicit transaction: one statement fails, the next is ignored
BEGIN;
INSERT INTO err_u VALUES (4);
SELECT 1 / 0 AS err_div;
SELECT 'ignored' AS err_ignored;
ROLLBACK;
SELECT 'after' AS err_after;
-- failed utility statements
CREATE TABLE err_u (k int);
DROP TABLE err_missing;
SELECT 'after' AS err_after;
-- a syntax error has no queryid
SELEC 1;
SELECT 'after' AS err_after;

SELECT calls, errors, rows, error_exec_time > 0 AS has_error_time,
       query
FROM pgss_ng ORDER BY query COLLATE "C";
SELECT errors, error_exec_time BETWEEN 90 AND 250 AS timed_out_after_100ms,
       calls, total_exec_time
FROM pgss_ng WHERE query = 'SELECT pg_sleep($1) AS err_sleep';
SELECT * FROM pgss_ng_diff;
SELECT dropped FROM pgss_ng_info;

-- PL/pgSQL under track = all
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
CREATE FUNCTION err_inner(x int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int;
BEGIN
  SELECT 10 / (x - k) INTO r FROM err_u WHERE k = 1;
  RETURN r;
END $$;
CREATE FUNCTION err_caught() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    PERFORM err_inner(1);
  EXCEPTION WHEN division_by_zero THEN
    RETURN -1;
  END;
  RETURN 0;
END $$;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
SELECT err_inner(6);
SELECT err_inner(1);
SELECT err_inner(3);
SELECT err_caught();
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);
SELECT toplevel, calls, errors, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- last_executed: set by the flush of an execution, failed ones included
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT clock_timestamp() AS t_last \gset
SELECT 1 / 0 AS err_last;
SELECT 'ok' AS ok_last;
SELECT plans, calls, errors, last_executed > :'t_last' AS after_start,
       last_executed <= clock_timestamp() AS not_future, query
FROM pgss_ng_detail WHERE query LIKE '%_last' ORDER BY query COLLATE "C";

-- Incremental reads: t0 < a < t1 < b < t2 < a again.  c fails before
-- t2 is read, and its failure is merged and flushed when the statement
-- that reads t2 starts: it changed before t2 (issue 22, item 2).  Each
-- read's own entry is flushed after the read (the next reads see it).
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT clock_timestamp() AS t0 \gset
SELECT 1 AS inc_a;
SELECT clock_timestamp() AS t1 \gset
SELECT 1 + 1 AS inc_b;
SELECT 1 / 0 AS inc_c;
SELECT clock_timestamp() AS t2 \gset
SELECT 1 AS inc_a;
SELECT query FROM pgss_ng(changed_since => :'t0') ORDER BY query COLLATE "C";
SELECT query FROM pgss_ng(changed_since => :'t1') ORDER BY query COLLATE "C";
SELECT query FROM pgss_ng(changed_since => :'t2') ORDER BY query COLLATE "C";
SELECT count(*) AS future FROM pgss_ng(changed_since => clock_timestamp() + interval '1 hour');
SELECT count(*) AS infinity FROM pgss_ng(true, 'infinity');
SELECT (SELECT count(*) FROM pgss_ng(true, NULL)) =
       (SELECT count(*) FROM pgss_ng) AS null_is_all,
       (SELECT count(*) FROM pgss_ng(false, '-infinity')) =
       (SELECT count(*) FROM pgss_ng) AS minus_infinity_is_all;
SELECT count(*) AS null_showtext FROM pgss_ng(NULL, NULL);
-- a min/max reset changes an entry
SELECT clock_timestamp() AS t3 \gset
SELECT pgss_ng_reset(0, 0, queryid, true) IS NOT NULL
FROM pgss_ng WHERE query = 'SELECT $1 + $2 AS inc_b';
SELECT query FROM pgss_ng(changed_since => :'t3') ORDER BY query COLLATE "C";

DROP FUNCTION err_inner(int), err_caught();
DROP TABLE err_u;
