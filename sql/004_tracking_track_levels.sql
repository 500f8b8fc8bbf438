--
-- 004_tracking_track_levels: pgss_ng.track = none records nothing, top only top-level
-- statements, all also the statements nested in PL/pgSQL functions, SQL
-- functions and DO blocks, with toplevel false (the same statement run at
-- top level and nested makes two entries).  Also: nested counts survive an
-- error of the calling statement, and a utility statement nested in a
-- PL/pgSQL function is counted as pg_stat_statements counts it: once, as
-- its cached plan's queryid is cleared after the first execution.  And the
-- odd cases: procedures that COMMIT, SQL-standard function bodies (no
-- queryid), statements run by the planner.  A failing top-level statement
-- shows with calls 0 (its failure counts in errors: 012_failures_errors).
--
-- Both extensions' track GUCs are switched in ONE statement with
-- set_config(): a SET of one GUC would be recorded by one extension only.
--
-- Expected output: expected/004_tracking_track_levels.out on PostgreSQL 15 and 16; _1.out on
--   17 (CALL's arguments are normalized; what the planner runs is nested);
--   _2.out on 18 (a SQL function's statements go through the plan cache:
--   planned once, their constants kept in the text).
--
CREATE TABLE trk_t (a int);
CREATE TABLE trk_u (a int);

CREATE FUNCTION trk_plpgsql(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  r bigint;
BEGIN
  INSERT INTO trk_t VALUES (n);
  SELECT count(*) INTO r FROM trk_t;
  RETURN r;
END $$;

-- two statements: not inlined
CREATE FUNCTION trk_sql(n int) RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO trk_t VALUES (n);
  SELECT count(*) FROM trk_t WHERE a >= 0;
$$;

CREATE FUNCTION trk_util() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE trk_u;
  INSERT INTO trk_u VALUES (1);
END $$;

CREATE FUNCTION trk_fail() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO trk_u VALUES (2);
  RAISE EXCEPTION 'trk_fail';
END $$;

-- SQL-standard body: stored parse trees, no queryid for its statements
CREATE FUNCTION trk_atomic(n int) RETURNS bigint LANGUAGE sql
BEGIN ATOMIC
  INSERT INTO trk_u VALUES (n);
  SELECT count(*) FROM trk_u;
END;

-- a procedure that commits in the middle
CREATE PROCEDURE trk_proc(n int) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO trk_u VALUES (n);
  COMMIT;
  INSERT INTO trk_u VALUES (n + 1);
END $$;

-- immutable: with a constant argument, the planner runs it
CREATE FUNCTION trk_immutable(n int) RETURNS bigint LANGUAGE plpgsql
IMMUTABLE AS $$
DECLARE
  r bigint;
BEGIN
  SELECT count(*) INTO r FROM generate_series(1, n);
  RETURN r;
END $$;

SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

-- none: nothing at all
SELECT set_config('pgss_ng.track', 'none', false),
       set_config('pg_stat_statements.track', 'none', false);
SELECT trk_plpgsql(1);
SELECT trk_sql(2);
DO $$ BEGIN PERFORM count(*) FROM trk_t; END $$;
SELECT count(*) FROM trk_t;
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);
SHOW pgss_ng.track;

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- top: the calling statements only
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT trk_plpgsql(10);
SELECT trk_plpgsql(11);
SELECT trk_sql(20);
DO $$ BEGIN PERFORM count(*) FROM trk_t; END $$;
SELECT count(*) FROM trk_t;

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- all: nested statements too, with toplevel = false
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
SELECT trk_plpgsql(100);
SELECT trk_plpgsql(101);
SELECT trk_sql(200);
SELECT trk_sql(201);
SELECT trk_sql(202);
DO $$ BEGIN PERFORM count(*) FROM trk_t; INSERT INTO trk_u VALUES (7); END $$;
SELECT count(*) FROM trk_t;
SELECT trk_util();
SELECT trk_util();
SELECT trk_fail();
SELECT trk_atomic(400);
CALL trk_proc(500);
CALL trk_proc(510);
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;
-- the count(*) run at top level and in the DO block: one queryid, 2 entries
SELECT count(*) AS entries, count(DISTINCT queryid) AS queryids
FROM pgss_ng WHERE query LIKE 'SELECT count(*)%FROM trk_t';

-- all with track_planning: nested plannings are counted as nested
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false),
       set_config('pgss_ng.track_planning', 'on', false),
       set_config('pg_stat_statements.track_planning', 'on', false);
SELECT trk_sql(300);
SELECT trk_sql(301);
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false),
       set_config('pgss_ng.track_planning', 'off', false),
       set_config('pg_stat_statements.track_planning', 'off', false);

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

-- track = top: a statement the planner runs (constant folding of an
-- immutable function) has exec nesting level 0, so pg_stat_statements 1.10
-- counts it as a top-level statement, with or without track_planning
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT trk_immutable(3);
SELECT trk_immutable(4);
SELECT set_config('pgss_ng.track_planning', 'on', false),
       set_config('pg_stat_statements.track_planning', 'on', false);
SELECT trk_immutable(5);
SELECT set_config('pgss_ng.track_planning', 'off', false),
       set_config('pg_stat_statements.track_planning', 'off', false);

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

DROP FUNCTION trk_plpgsql(int), trk_sql(int), trk_util(), trk_fail(),
  trk_atomic(int), trk_immutable(int);
DROP PROCEDURE trk_proc(int);
DROP TABLE trk_t, trk_u;
