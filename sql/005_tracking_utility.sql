--
-- 005_tracking_utility: pgss_ng.track_utility.  On: utility statements are entries
-- (with their own text, constants kept), and the queries inside them are
-- not counted again; off: no utility statement is an entry, but the
-- queries that EXECUTE, COPY, EXPLAIN ANALYZE, CREATE TABLE AS and cursors
-- run are counted as pg_stat_statements counts them, and so are the
-- statements of DO blocks and procedures, as top-level ones.  Then on with
-- track = all: the queries inside utility statements as nested entries.
--
-- Both extensions' GUCs are switched in ONE statement with set_config():
-- a SET of one GUC would be recorded by one extension only.
--
-- Expected output: expected/005_tracking_utility.out on PostgreSQL 15; _1.out on 16
--   (the constants of utility statements are normalized); _2.out on 17
--   (also DEALLOCATE's name; what utility statements run is nested, so
--   with track_utility off it is not top-level any more); _3.out on 18
--   (also SET values; EXPLAIN ANALYZE shows fractional rows and buffers).
--
CREATE TABLE utl_t (a int);
INSERT INTO utl_t SELECT generate_series(1, 10);
CREATE PROCEDURE utl_proc() LANGUAGE plpgsql AS $$
BEGIN
  PERFORM count(*) FROM utl_t WHERE a > 5;
END $$;

-- track_utility = on (default)
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SET work_mem = '4MB';
SHOW work_mem;
RESET work_mem;
VACUUM utl_t;
ANALYZE utl_t;
EXPLAIN (COSTS OFF) SELECT a FROM utl_t WHERE a = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a FROM utl_t WHERE a > 7;
PREPARE utl_p AS SELECT a FROM utl_t WHERE a = 2;
EXECUTE utl_p;
EXECUTE utl_p;
DEALLOCATE utl_p;
COPY (SELECT a FROM utl_t WHERE a <= 2 ORDER BY a) TO STDOUT;
BEGIN;
DECLARE utl_c CURSOR FOR SELECT a FROM utl_t ORDER BY a;
FETCH 3 FROM utl_c;
CLOSE utl_c;
COMMIT;
CREATE TABLE utl_ctas AS SELECT a FROM utl_t WHERE a <= 5;
DROP TABLE utl_ctas;
SELECT count(*) FROM utl_t;
DO $$ BEGIN PERFORM count(*) FROM utl_t WHERE a < 3; END $$;
CALL utl_proc();

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- track_utility = off
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track_utility', 'off', false),
       set_config('pg_stat_statements.track_utility', 'off', false);
SET work_mem = '4MB';
SHOW work_mem;
RESET work_mem;
VACUUM utl_t;
ANALYZE utl_t;
EXPLAIN (COSTS OFF) SELECT a FROM utl_t WHERE a = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a FROM utl_t WHERE a > 7;
PREPARE utl_p AS SELECT a FROM utl_t WHERE a = 2;
EXECUTE utl_p;
EXECUTE utl_p;
DEALLOCATE utl_p;
COPY (SELECT a FROM utl_t WHERE a <= 2 ORDER BY a) TO STDOUT;
BEGIN;
DECLARE utl_c CURSOR FOR SELECT a FROM utl_t ORDER BY a;
FETCH 3 FROM utl_c;
CLOSE utl_c;
COMMIT;
CREATE TABLE utl_ctas AS SELECT a FROM utl_t WHERE a <= 5;
DROP TABLE utl_ctas;
SELECT count(*) FROM utl_t;
-- DO and CALL are not tracked, so what they run is at nesting level 0:
-- counted as top-level statements
DO $$ BEGIN PERFORM count(*) FROM utl_t WHERE a < 3; END $$;
CALL utl_proc();
SELECT set_config('pgss_ng.track_utility', 'on', false),
       set_config('pg_stat_statements.track_utility', 'on', false);

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- track_utility = on, track = all: queries inside utility statements
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
EXPLAIN (COSTS OFF) SELECT a FROM utl_t WHERE a = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a FROM utl_t WHERE a > 7;
PREPARE utl_p AS SELECT a FROM utl_t WHERE a = 2;
EXECUTE utl_p;
EXECUTE utl_p;
DEALLOCATE utl_p;
COPY (SELECT a FROM utl_t WHERE a <= 2 ORDER BY a) TO STDOUT;
BEGIN;
DECLARE utl_c CURSOR FOR SELECT a FROM utl_t ORDER BY a;
FETCH 3 FROM utl_c;
CLOSE utl_c;
COMMIT;
CREATE TABLE utl_ctas AS SELECT a FROM utl_t WHERE a <= 5;
DROP TABLE utl_ctas;
DO $$ BEGIN PERFORM count(*) FROM utl_t WHERE a < 3; END $$;
CALL utl_proc();
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

DROP PROCEDURE utl_proc();
DROP TABLE utl_t;
