--
-- 008_reads_info: pgss_ng_info.  entries counts the live entries, including the
-- ones made at parse analysis for statements with constants that never
-- finished (not shown by the view); dealloc and dropped stay 0 while far
-- below pgss_ng.max; a full reset leaves only the entry of the reset
-- statement itself.  track = none makes no entry at all.
--
-- Expected output: expected/008_reads_info.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
-- 1: the reset statement (this statement has no constants: its entry is
-- made when it ends)
SELECT entries, dealloc, dropped FROM pgss_ng_info;
-- 2 + the entry of this one, made at parse analysis
SELECT entries, 1 + 1 AS two FROM pgss_ng_info;
-- a statement with constants that fails: its entry exists, no call (one
-- error)
SELECT 1 / 0 AS info_fail;
-- 3 + the failed one
SELECT entries, dealloc, dropped FROM pgss_ng_info;
-- the view shows the three finished statements and the failed one
SELECT calls, query FROM pgss_ng ORDER BY query COLLATE "C";
-- 4 + the view read + this one (another operator: not the same queryid
-- as the "two" statement)
SELECT entries, 2 * 2 AS four FROM pgss_ng_info;
SELECT * FROM pgss_ng_diff;

-- track = none: nothing new
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'none', false),
       set_config('pg_stat_statements.track', 'none', false);
SELECT 5 AS info_none;
SELECT 1 / 0 AS info_none_fail;
SELECT entries AS entries_none FROM pgss_ng_info;
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);
-- the reset statement and the set_config made at parse analysis (it
-- started under top, ended under none)
SELECT entries, dealloc, dropped FROM pgss_ng_info;
SELECT calls, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM pgss_ng_diff;
