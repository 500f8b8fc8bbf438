--
-- 020_reads_bad_input: the SQL functions and GUCs given bad input.
--   * NULL arguments: every function is STRICT, so pgss_ng(NULL) returns no
--     row and pgss_ng_reset() with any NULL argument returns NULL and resets
--     nothing (as pg_stat_statements(NULL) / pg_stat_statements_reset()).
--   * Extreme OIDs and queryids (4294967295, '-1'::oid, -1,
--     +-9223372036854775807/8): accepted, match no entry, reset nothing;
--     values out of the type's range fail in the cast or at function
--     lookup, before pgss_ng is called.  Entries with negative and positive
--     queryids are each removed by their own queryid.
--   * An unprivileged role: every form of pgss_ng_reset() (also with NULL
--     or extreme arguments) is refused with SQLSTATE 42501 and resets
--     nothing, like pg_stat_statements_reset() (all-NULL constant
--     arguments are folded to NULL by the planner: no call, no error);
--     pgss_ng(NULL) and pgss_ng_info still work for it.
--   * Inside an aborted transaction: each function fails with "current
--     transaction is aborted" (25P02) and records nothing; after ROLLBACK
--     all is normal.  A reset is not transactional: it stays done after
--     ROLLBACK.
--   * GUCs: out-of-range and malformed values are rejected by SET,
--     set_config() and ALTER SYSTEM with the standard messages; nothing is
--     written to postgresql.auto.conf and the settings are unchanged.
--   * SQL objects of another build: pgss_ng() and pgss_ng_detail()
--     declared with a column the library does not make, or makes with
--     another type, fail with a clear error (55000) instead of reading
--     past the row they fill; declared with its first columns only (as an
--     earlier version's SQL), pgss_ng() returns the same rows.
-- pgss_ng_diff (pg_stat_statements is the reference) stays empty.
--
-- Expected output: expected/020_reads_bad_input.out on PostgreSQL 15; _1.out on
--   16 (the constants of utility statements are normalized); _2.out on 17
--   and 18 (also the unit in the valid range of query_text_memory).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 'kept' AS bad_a;
SELECT 40 + 2 AS bad_b;

-- NULL arguments
SELECT count(*) AS ng_rows FROM pgss_ng(NULL);
SELECT count(*) AS ref_rows FROM pg_stat_statements(NULL);
SELECT count(*) AS ng_rows FROM pgss_ng(showtext => NULL::boolean);
SELECT pgss_ng_reset(NULL, 0, 0, false) IS NULL AS null_userid,
       pgss_ng_reset(0, NULL, 0, false) IS NULL AS null_dbid,
       pgss_ng_reset(0, 0, NULL, false) IS NULL AS null_queryid,
       pgss_ng_reset(0, 0, 0, NULL) IS NULL AS null_minmax_only,
       pgss_ng_reset(NULL, NULL, NULL, NULL) IS NULL AS all_null,
       pgss_ng_reset(userid => NULL) IS NULL AS named_null,
       pgss_ng_reset(minmax_only => NULL) IS NULL AS named_null_minmax;
SELECT pg_stat_statements_reset(NULL, 0, 0) IS NULL AS ref_null_userid,
       pg_stat_statements_reset(0, NULL, 0) IS NULL AS ref_null_dbid,
       pg_stat_statements_reset(0, 0, NULL) IS NULL AS ref_null_queryid,
       pg_stat_statements_reset(NULL, NULL, NULL) IS NULL AS ref_all_null;
-- pgss_ng_info() takes no argument at all
SELECT * FROM pgss_ng_info(NULL);
-- nothing was reset: every entry is still there, min/max untouched
SELECT calls, rows, minmax_stats_since = stats_since AS minmax_never_reset,
       query
FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;

-- Extreme OIDs and queryids: accepted, match nothing
SELECT 4294967295::oid AS max_oid, '-1'::oid AS minus_one_oid,
       -1::bigint AS minus_one, 9223372036854775807 AS max_bigint,
       '-9223372036854775808'::bigint AS min_bigint;
SELECT pgss_ng_reset(4294967295::oid) IS NOT NULL AS max_userid,
       pgss_ng_reset('-1'::oid) IS NOT NULL AS minus_one_userid,
       pgss_ng_reset(0, 4294967295::oid) IS NOT NULL AS max_dbid,
       pgss_ng_reset(0, 0, -1::bigint) IS NOT NULL AS minus_one_queryid,
       pgss_ng_reset(0, 0, 9223372036854775807) IS NOT NULL AS max_queryid,
       pgss_ng_reset(0, 0, '-9223372036854775808'::bigint) IS NOT NULL
         AS min_queryid,
       pgss_ng_reset(4294967295::oid, 4294967295::oid, -1::bigint, true)
         IS NOT NULL AS all_extreme_minmax;
-- the literal -9223372036854775808 is a bigint constant too
SELECT pgss_ng_reset(0, 0, -9223372036854775808) IS NOT NULL
  AS min_queryid_literal;
-- (pg_stat_statements_reset() returns void, which IS NOT NULL)
SELECT pg_stat_statements_reset(4294967295::oid) IS NOT NULL,
       pg_stat_statements_reset(0, 4294967295::oid) IS NOT NULL,
       pg_stat_statements_reset(0, 0, -1::bigint) IS NOT NULL,
       pg_stat_statements_reset(0, 0, 9223372036854775807) IS NOT NULL,
       pg_stat_statements_reset(0, 0, '-9223372036854775808'::bigint)
         IS NOT NULL,
       pg_stat_statements_reset(0, 0, -9223372036854775808) IS NOT NULL;
-- out of the types' ranges: errors before pgss_ng_reset is called (each a
-- failed execution of its statement)
SELECT pgss_ng_reset(4294967296);
SELECT pgss_ng_reset(0, 0, 9223372036854775808);
SELECT pgss_ng_reset(0, 0, -9223372036854775808::bigint);
SELECT pgss_ng_reset(-1::oid);
-- still nothing reset (the extreme-value resets above were counted)
SELECT calls, rows, minmax_stats_since = stats_since AS minmax_never_reset,
       query
FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;

-- Reset by queryid reaches negative and positive queryids alike: sixteen
-- statements with distinct queryids (1 to 16 columns), each then removed
-- by its own queryid; the others stay.
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
\o /dev/null
SELECT 'SELECT ' || string_agg('1', ', ') AS stmt
FROM generate_series(1, 16) n, generate_series(1, n) c
GROUP BY n ORDER BY n \gexec
\o
SELECT 17 + 1 AS not_removed;
CREATE TEMP TABLE bad_qids AS
  SELECT queryid, calls, query FROM pgss_ng
  WHERE query ~ '^SELECT \$1(, \$[0-9]+)*$';
SELECT count(*) AS statements, count(DISTINCT queryid) AS queryids,
       sum(calls) AS calls,
       count(*) FILTER (WHERE queryid < 0) > 0 AS some_negative,
       count(*) FILTER (WHERE queryid > 0) > 0 AS some_positive
FROM bad_qids;
SELECT count(*) FILTER (WHERE r IS NOT NULL) AS resets
FROM (SELECT pgss_ng_reset(0, 0, queryid) AS r,
             pg_stat_statements_reset(0, 0, queryid)
      FROM bad_qids) s;
SELECT count(*) AS left_over FROM pgss_ng WHERE queryid IN
  (SELECT queryid FROM bad_qids);
-- the other entries are all still there
SELECT calls, rows, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;
DROP TABLE bad_qids;

-- An unprivileged role: reset refused (42501) whatever the arguments
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 'before' AS bad_unpriv;
CREATE ROLE regress_pgss_ng_bad;
SET ROLE regress_pgss_ng_bad;
SELECT pgss_ng_reset();
\echo SQLSTATE :SQLSTATE
-- a NULL argument computed at run time: refused as well
SELECT pgss_ng_reset((SELECT NULL::oid), 0, 0, false);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(0, 0, -1::bigint);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(4294967295::oid, 4294967295::oid, 9223372036854775807, true);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(minmax_only => true);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(userid => 'regress_pgss_ng_bad'::regrole);
\echo SQLSTATE :SQLSTATE
DO $$
BEGIN
  PERFORM pgss_ng_reset(0, 0, 0, false);
  RAISE NOTICE 'reset allowed';
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'reset refused: SQLSTATE %', SQLSTATE;
END $$;
-- All-NULL constant arguments: the planner folds a STRICT function with
-- a NULL constant argument to NULL before the executor checks EXECUTE, so
-- there is no error, and no call (PostgreSQL's behaviour, the same for
-- pg_stat_statements_reset); nothing is reset (checked below).
SELECT pgss_ng_reset(NULL, NULL, NULL, NULL);
\echo SQLSTATE :SQLSTATE
SELECT pg_stat_statements_reset(NULL, NULL, NULL);
\echo SQLSTATE :SQLSTATE
SELECT pg_stat_statements_reset();
\echo SQLSTATE :SQLSTATE
-- reading works, also with bad arguments
SELECT count(*) AS ng_rows FROM pgss_ng(NULL);
SELECT count(*) > 0 AS has_rows FROM pgss_ng(false);
SELECT dealloc, dropped FROM pgss_ng_info();
RESET ROLE;
-- nothing was reset by the role
SELECT userid = 'regress_pgss_ng_bad'::regrole AS by_role, calls, query
FROM pgss_ng ORDER BY query COLLATE "C", by_role;
SELECT * FROM pgss_ng_diff;
DROP ROLE regress_pgss_ng_bad;

-- Inside an aborted transaction
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
BEGIN;
SELECT 1 AS bad_before_error;
SELECT 1 / 0 AS bad_aborts;
SELECT count(*) FROM pgss_ng;
\echo SQLSTATE :SQLSTATE
SELECT count(*) FROM pgss_ng(false);
SELECT * FROM pgss_ng_info;
SELECT pgss_ng_reset();
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(NULL, NULL, NULL, NULL);
SELECT pgss_ng_reset(0, 0, 0, true);
ROLLBACK;
-- normal again: the ignored statements were not recorded, the failed one
-- has no call (one error)
SELECT calls, rows, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;
SELECT entries FROM pgss_ng_info;

-- after a savepoint rollback, in the same transaction, all works; the
-- reset is not undone by the final ROLLBACK
BEGIN;
SAVEPOINT s;
SELECT 1 / 0 AS bad_in_savepoint;
ROLLBACK TO SAVEPOINT s;
SELECT count(*) > 0 AS has_rows FROM pgss_ng;
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 'after reset' AS bad_in_xact;
ROLLBACK;
SELECT calls, rows, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;

-- GUCs: bad values rejected, with the standard messages
SET pgss_ng.max = 50;
\echo SQLSTATE :SQLSTATE
SELECT set_config('pgss_ng.max', '50', false);
ALTER SYSTEM SET pgss_ng.max = 99;
\echo SQLSTATE :SQLSTATE
ALTER SYSTEM SET pgss_ng.max = 0;
ALTER SYSTEM SET pgss_ng.max = -1;
ALTER SYSTEM SET pgss_ng.max = 2147483647;
ALTER SYSTEM SET pgss_ng.max = 99999999999;
ALTER SYSTEM SET pgss_ng.max = 'lots';
ALTER SYSTEM SET pgss_ng.max = '1000 kB';
SET pgss_ng.query_text_memory = '1MB';
\echo SQLSTATE :SQLSTATE
ALTER SYSTEM SET pgss_ng.query_text_memory = '255kB';
\echo SQLSTATE :SQLSTATE
ALTER SYSTEM SET pgss_ng.query_text_memory = 255;
ALTER SYSTEM SET pgss_ng.query_text_memory = '261119B';
ALTER SYSTEM SET pgss_ng.query_text_memory = 0;
ALTER SYSTEM SET pgss_ng.query_text_memory = '10 parsecs';
\echo SQLSTATE :SQLSTATE
ALTER SYSTEM SET pgss_ng.query_text_memory = '2TB';
SET pgss_ng.track = 'bogus';
\echo SQLSTATE :SQLSTATE
SET pgss_ng.track = '';
SELECT set_config('pgss_ng.track', 'toplevel', false);
ALTER SYSTEM SET pgss_ng.track = 'bogus';
SET pgss_ng.track_utility = 'maybe';
\echo SQLSTATE :SQLSTATE
SET pgss_ng.track_planning = 2;
ALTER SYSTEM SET pgss_ng.save = 'perhaps';
SET pgss_ng.save = off;
\echo SQLSTATE :SQLSTATE
SET pgss_ng.no_such_setting = 1;
\echo SQLSTATE :SQLSTATE
-- enum values are case-insensitive, and a SET inside a failed
-- transaction is rolled back
SET pgss_ng.track = 'ALL';
SHOW pgss_ng.track;
RESET pgss_ng.track;
BEGIN;
SET pgss_ng.track = 'none';
SELECT 1 / 0;
ROLLBACK;
-- nothing changed, nothing was written to postgresql.auto.conf
SELECT name, setting, unit, source FROM pg_settings
WHERE name LIKE 'pgss\_ng.%' ORDER BY name COLLATE "C";
SELECT count(*) AS auto_conf_lines FROM pg_file_settings
WHERE name LIKE 'pgss\_ng.%' AND sourcefile LIKE '%postgresql.auto.conf';
-- SQL objects that are not the library's: a declared column that it does
-- not make, or makes with another type, is a clear error (no row read past
-- what the library fills); the first columns alone (an earlier version's
-- SQL) get the same rows as the full function
CREATE FUNCTION pgss_ng_stale(IN showtext boolean, IN changed_since timestamptz,
                              OUT userid oid, OUT dbid text)
RETURNS SETOF record AS '$libdir/pgss_ng', 'pgss_ng' LANGUAGE C;
CREATE FUNCTION pgss_ng_detail_stale(IN showtext boolean,
                                     IN changed_since timestamptz,
                                     OUT userid oid, OUT no_such_column int8)
RETURNS SETOF record AS '$libdir/pgss_ng', 'pgss_ng_detail' LANGUAGE C;
CREATE FUNCTION pgss_ng_first(IN showtext boolean, IN changed_since timestamptz,
                              OUT userid oid, OUT dbid oid, OUT toplevel bool,
                              OUT queryid bigint)
RETURNS SETOF record AS '$libdir/pgss_ng', 'pgss_ng' LANGUAGE C;
SELECT * FROM pgss_ng_stale(true, NULL);
SELECT * FROM pgss_ng_detail_stale(false, NULL);
SELECT (SELECT array_agg((userid, dbid, toplevel, queryid)
                         ORDER BY userid, dbid, toplevel, queryid)
        FROM pgss_ng_first(true, NULL)) =
       (SELECT array_agg((userid, dbid, toplevel, queryid)
                         ORDER BY userid, dbid, toplevel, queryid)
        FROM pgss_ng(true)) AS same_rows,
       (SELECT count(*) FROM pgss_ng_first(false, NULL)) > 5 AS rows;
DROP FUNCTION pgss_ng_stale(boolean, timestamptz);
DROP FUNCTION pgss_ng_detail_stale(boolean, timestamptz);
DROP FUNCTION pgss_ng_first(boolean, timestamptz);
SELECT * FROM pgss_ng_diff;
