--
-- 007_reset_functions: every form of pgss_ng_reset(), each run together with the same
-- pg_stat_statements_reset() so that the two views stay equal:
--   by userid, by dbid (entries of another database), by queryid, by
--   (userid, queryid), minmax_only (min/max times become 0 and
--   minmax_stats_since moves forward; calls, rows and stats_since stay),
--   and a full reset.  pgss_ng_info.stats_reset moves on a full reset only;
--   pgss_ng_reset() returns a timestamptz, for a full reset the new
--   stats_reset.  Last, resets run by a statement nested in a DO block.
--
-- Expected output: expected/007_reset_functions.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

CREATE ROLE regress_pgss_ng_reset_user;
CREATE DATABASE regress_pgss_ng_db;
SELECT current_database() AS regress_db \gset

-- pgss_ng_info.stats_reset before any partial reset
SELECT stats_reset AS stats_reset_0 FROM pgss_ng_info \gset

-- statements of the superuser here, of the role here, of the superuser in
-- the other database
SELECT 'su' AS rst_who, 1 + 1 AS rst_a;
SELECT 'su' AS rst_who, 1 + 2 AS rst_a;
SELECT 7 * 6 AS rst_b;
SET ROLE regress_pgss_ng_reset_user;
SELECT 'role' AS rst_who, 1 + 1 AS rst_a;
SELECT 5 - 3 AS rst_c;
RESET ROLE;
\c regress_pgss_ng_db
SELECT 8 / 2 AS rst_d;
SELECT 8 / 4 AS rst_d;
\c :regress_db
SELECT wait_for_other_backends();

SELECT dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AS this_db,
       userid = 'regress_pgss_ng_reset_user'::regrole AS rst_user,
       calls, rows, query
FROM pgss_ng ORDER BY query COLLATE "C", this_db, rst_user;
SELECT * FROM pgss_ng_diff;

-- by userid: the role's entries only
SELECT pgss_ng_reset('regress_pgss_ng_reset_user'::regrole) IS NOT NULL,
       pg_stat_statements_reset('regress_pgss_ng_reset_user'::regrole) IS NOT NULL;
SELECT count(*) AS role_entries FROM pgss_ng
WHERE userid = 'regress_pgss_ng_reset_user'::regrole;

-- by dbid: the other database's entries only
SELECT pgss_ng_reset(0, (SELECT oid FROM pg_database
                         WHERE datname = 'regress_pgss_ng_db')) IS NOT NULL,
       pg_stat_statements_reset(0, (SELECT oid FROM pg_database
                                    WHERE datname = 'regress_pgss_ng_db')) IS NOT NULL;
SELECT count(*) AS other_db_entries FROM pgss_ng
WHERE dbid <> (SELECT oid FROM pg_database WHERE datname = current_database());

-- by queryid
SELECT queryid AS qid_b FROM pgss_ng WHERE query LIKE '%AS rst_b' \gset
SELECT pgss_ng_reset(0, 0, :qid_b) IS NOT NULL,
       pg_stat_statements_reset(0, 0, :qid_b) IS NOT NULL;
SELECT count(*) AS rst_b_entries FROM pgss_ng WHERE queryid = :qid_b;

-- by userid and queryid: the superuser's rst_who entry (the role's went above)
SET ROLE regress_pgss_ng_reset_user;
SELECT 'role' AS rst_who, 2 + 2 AS rst_a;
RESET ROLE;
SELECT queryid AS qid_who FROM pgss_ng WHERE query LIKE '%AS rst_a'
  AND userid = current_user::regrole \gset
SELECT pgss_ng_reset(current_user::regrole, 0, :qid_who) IS NOT NULL,
       pg_stat_statements_reset(current_user::regrole, 0, :qid_who) IS NOT NULL;
SELECT userid = 'regress_pgss_ng_reset_user'::regrole AS rst_user, calls
FROM pgss_ng WHERE queryid = :qid_who;

-- none of the partial resets moved stats_reset
SELECT stats_reset = :'stats_reset_0' AS stats_reset_unchanged FROM pgss_ng_info;

SELECT dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AS this_db,
       userid = 'regress_pgss_ng_reset_user'::regrole AS rst_user,
       calls, rows, query
FROM pgss_ng ORDER BY query COLLATE "C", this_db, rst_user;
SELECT * FROM pgss_ng_diff;

-- minmax_only on one entry: min/max and minmax_stats_since restart, the
-- counts and stats_since stay
SELECT 10 AS rst_m;
SELECT 20 AS rst_m;
SELECT 30 AS rst_m;
SELECT queryid AS qid_m, stats_since AS since_m, minmax_stats_since AS mm_m
FROM pgss_ng WHERE query LIKE '%AS rst_m' \gset
SELECT calls, minmax_stats_since = stats_since AS mm_since_is_creation
FROM pgss_ng WHERE queryid = :qid_m;
SELECT pgss_ng_reset(0, 0, :qid_m, true) > :'mm_m' AS returns_later_time;
SELECT calls, rows, min_exec_time, max_exec_time,
       min_plan_time, max_plan_time,
       stats_since = :'since_m' AS stats_since_unchanged,
       minmax_stats_since > :'mm_m' AS minmax_stats_since_moved
FROM pgss_ng WHERE queryid = :qid_m;
-- every other entry keeps minmax_stats_since = stats_since: the 22 listed
-- above and the 4 statements since that are not rst_m (the listing and the
-- diff query ran again: no new entries)
SELECT count(*) FILTER (WHERE minmax_stats_since > stats_since) AS minmax_reset,
       count(*) FILTER (WHERE minmax_stats_since = stats_since) AS untouched
FROM pgss_ng;
-- one more call sets min = max = that call's time
SELECT 40 AS rst_m;
SELECT calls, min_exec_time = max_exec_time AS min_is_max,
       max_exec_time <= total_exec_time AS max_within_total,
       minmax_stats_since > :'mm_m' AS minmax_stats_since_moved
FROM pgss_ng WHERE queryid = :qid_m;
SELECT * FROM pgss_ng_diff;

-- minmax_only for everything still keeps every entry and stats_reset
SELECT count(*) AS entries_before FROM pgss_ng \gset
SELECT pgss_ng_reset(minmax_only => true) IS NOT NULL;
-- 2 new entries: the \gset query and the reset statement, whose entry was
-- made at parse analysis (it has a constant), before the reset ran.  So
-- every entry had its min/max restarted, and all but the reset statement
-- (one call since) still have min = max = 0
SELECT count(*) - :entries_before AS new_entries,
       count(*) FILTER (WHERE minmax_stats_since > stats_since)
         - :entries_before AS moved_beyond_before,
       count(*) FILTER (WHERE min_exec_time = 0 AND max_exec_time = 0)
         - :entries_before AS zero_beyond_before,
       count(*) FILTER (WHERE minmax_stats_since = stats_since) AS untouched
FROM pgss_ng;
SELECT stats_reset = :'stats_reset_0' AS stats_reset_unchanged FROM pgss_ng_info;
SELECT * FROM pgss_ng_diff;

-- full reset: returns a timestamptz, the new stats_reset
SELECT pg_typeof(pgss_ng_reset()), pg_stat_statements_reset() IS NOT NULL;
SELECT pgss_ng_reset() AS reset_at,
       pg_stat_statements_reset() IS NOT NULL AS ref_reset \gset
SELECT :'ref_reset' AS ref_reset;
SELECT stats_reset = :'reset_at' AS stats_reset_is_returned,
       stats_reset > :'stats_reset_0' AS stats_reset_moved
FROM pgss_ng_info;
SELECT calls, rows, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;

-- resets run inside a statement (track = all): the caller's own counts
-- made before a reset go with the entries, those made after it stay
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
DO $$
BEGIN
  PERFORM 1 + 1;
  PERFORM 2 * 2;
  PERFORM pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
  PERFORM 1 + 1;
  PERFORM 3 - 3;
END $$;
DO $$
BEGIN
  PERFORM 5 + 1;
  PERFORM pgss_ng_reset(0, 0, (SELECT queryid FROM pgss_ng
                               WHERE query LIKE '%$1 - $2%')) IS NOT NULL,
          pg_stat_statements_reset(0, 0, (SELECT queryid FROM pg_stat_statements
                                          WHERE query LIKE '%$1 - $2%')) IS NOT NULL;
  PERFORM 6 + 1;
END $$;
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);
SELECT toplevel, calls, rows, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;

SELECT wait_for_other_backends();
DROP DATABASE regress_pgss_ng_db;
DROP ROLE regress_pgss_ng_reset_user;
