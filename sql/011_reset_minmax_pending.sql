--
-- 011_reset_minmax_pending: pgss_ng_reset(minmax_only => true) restarts
-- min/max at minmax_stats_since, so a call that ended BEFORE the reset must
-- not set the new min/max, even when it is still pending in the resetting
-- backend (a statement nested in the same top-level statement, track =
-- all).  pg_stat_statements (PostgreSQL 17, where minmax_only comes from)
-- records each call at once, so there the entry shows min = max = 0; and
-- pgss_ng's full reset already flushes the caller's pending counts first.
-- The pg_sleep only makes the pre-reset call's time certainly non-zero.
--
-- Expected output: expected/011_reset_minmax_pending.out
--   on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT set_config('pgss_ng.track', 'all', false),
       set_config('pg_stat_statements.track', 'all', false);
DO $$ BEGIN PERFORM pg_sleep(0.01); PERFORM pgss_ng_reset(0, 0, 0, true); END $$;
SELECT set_config('pgss_ng.track', 'top', false),
       set_config('pg_stat_statements.track', 'top', false);

SELECT calls, minmax_stats_since > stats_since AS minmax_stats_since_moved,
       min_exec_time = 0 AND max_exec_time = 0 AS minmax_zero
FROM pgss_ng WHERE query = 'SELECT pg_sleep($1)';
SELECT toplevel, calls, rows, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;
