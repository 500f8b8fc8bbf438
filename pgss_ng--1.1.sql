/* pgss_ng--1.1.sql: pgss_ng 1.1, the full install script */
-- What 1.1 changes from 1.0 (pgss_ng--1.0--1.1.sql makes a 1.0
-- installation the same; a test compares the two):
--   * The views call their functions with every argument, each of its
--     exact type (pgss_ng(true, NULL::timestamptz), not pgss_ng(true)):
--     the call resolves to the extension's own function even where other
--     roles may create functions in its schema (an exact match is never
--     passed over; a same-named function that would also fit a call
--     relying on defaults could only make creation fail).
--   * pgss_ng_info_memory(), and its columns at the end of the view
--     pgss_ng_info: the shared memory of the entries, the texts and the
--     histograms, and the times not kept in a histogram.
--   * The wait-event profile of each statement: the view pgss_ng_waits;
--     the wait time columns appended to pgss_ng_detail and
--     pgss_ng_evicted; pgss_ng_info's view joins pgss_ng_waits_info()
--     for the sampler's counters (the function pgss_ng_info() keeps its
--     columns: pgss_ng_compat 1.0 depends on it, and may be updated
--     after pgss_ng).
--   * Plan rows: pgss_ng_plans (a row per plan of each statement), their
--     counters in pgss_ng_info (from pgss_ng_plans_info()), and
--     pgss_ng_detail's plans_seen and last_plan_change (appended; the
--     function is made again).

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pgss_ng" to load this file. \quit

-- Per-statement statistics: the columns of pg_stat_statements 1.12
-- (PostgreSQL 18), in its order, on every server version, then pgss_ng's
-- own counters (failed executions).  A column the server
-- cannot measure is NULL (before 17: local_blk_*_time, jit_deform_*;
-- before 18: wal_buffers_full, parallel_workers_*); before 17,
-- shared_blk_*_time holds the server's combined shared and local block
-- times (1.10's blk_*_time).  When each entry last ran, its time quantiles
-- and its CPU times are in pgss_ng_detail (below).
-- changed_since: only the entries changed at or after it (NULL: all).
-- Not STRICT, so that changed_since can default to NULL; a NULL showtext
-- returns no rows.
CREATE FUNCTION pgss_ng(IN showtext boolean DEFAULT true,
    IN changed_since timestamptz DEFAULT NULL,
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT queryid bigint,
    OUT query text,
    OUT plans int8,
    OUT total_plan_time float8,
    OUT min_plan_time float8,
    OUT max_plan_time float8,
    OUT mean_plan_time float8,
    OUT stddev_plan_time float8,
    OUT calls int8,
    OUT total_exec_time float8,
    OUT min_exec_time float8,
    OUT max_exec_time float8,
    OUT mean_exec_time float8,
    OUT stddev_exec_time float8,
    OUT rows int8,
    OUT shared_blks_hit int8,
    OUT shared_blks_read int8,
    OUT shared_blks_dirtied int8,
    OUT shared_blks_written int8,
    OUT local_blks_hit int8,
    OUT local_blks_read int8,
    OUT local_blks_dirtied int8,
    OUT local_blks_written int8,
    OUT temp_blks_read int8,
    OUT temp_blks_written int8,
    OUT shared_blk_read_time float8,
    OUT shared_blk_write_time float8,
    OUT local_blk_read_time float8,
    OUT local_blk_write_time float8,
    OUT temp_blk_read_time float8,
    OUT temp_blk_write_time float8,
    OUT wal_records int8,
    OUT wal_fpi int8,
    OUT wal_bytes numeric,
    OUT wal_buffers_full int8,
    OUT jit_functions int8,
    OUT jit_generation_time float8,
    OUT jit_inlining_count int8,
    OUT jit_inlining_time float8,
    OUT jit_optimization_count int8,
    OUT jit_optimization_time float8,
    OUT jit_emission_count int8,
    OUT jit_emission_time float8,
    OUT jit_deform_count int8,
    OUT jit_deform_time float8,
    OUT parallel_workers_to_launch int8,
    OUT parallel_workers_launched int8,
    OUT stats_since timestamptz,
    OUT minmax_stats_since timestamptz,
    OUT errors int8,
    OUT error_exec_time float8
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng AS
  SELECT * FROM pgss_ng(true, NULL::pg_catalog.timestamptz);

GRANT SELECT ON pgss_ng TO PUBLIC;

-- The same rows with every column: pgss_ng's, then what is kept of each
-- entry's times beside its counters (when it last ran, its execution and
-- planning time quantiles, its CPU times, its wait time by wait event
-- type: samples x pgss_ng.wait_sample_period, an estimate; NULL while
-- sampling is off), then its plans: how many plan rows were made for it
-- (pgss_ng_plans; NULL: no plan identified) and when the last one past the
-- first was.  Kept apart from pgss_ng,
-- whose rows are as many columns as pg_stat_statements' and read about as
-- fast; same arguments and privileges.
CREATE FUNCTION pgss_ng_detail(IN showtext boolean DEFAULT true,
    IN changed_since timestamptz DEFAULT NULL,
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT queryid bigint,
    OUT query text,
    OUT plans int8,
    OUT total_plan_time float8,
    OUT min_plan_time float8,
    OUT max_plan_time float8,
    OUT mean_plan_time float8,
    OUT stddev_plan_time float8,
    OUT calls int8,
    OUT total_exec_time float8,
    OUT min_exec_time float8,
    OUT max_exec_time float8,
    OUT mean_exec_time float8,
    OUT stddev_exec_time float8,
    OUT rows int8,
    OUT shared_blks_hit int8,
    OUT shared_blks_read int8,
    OUT shared_blks_dirtied int8,
    OUT shared_blks_written int8,
    OUT local_blks_hit int8,
    OUT local_blks_read int8,
    OUT local_blks_dirtied int8,
    OUT local_blks_written int8,
    OUT temp_blks_read int8,
    OUT temp_blks_written int8,
    OUT shared_blk_read_time float8,
    OUT shared_blk_write_time float8,
    OUT local_blk_read_time float8,
    OUT local_blk_write_time float8,
    OUT temp_blk_read_time float8,
    OUT temp_blk_write_time float8,
    OUT wal_records int8,
    OUT wal_fpi int8,
    OUT wal_bytes numeric,
    OUT wal_buffers_full int8,
    OUT jit_functions int8,
    OUT jit_generation_time float8,
    OUT jit_inlining_count int8,
    OUT jit_inlining_time float8,
    OUT jit_optimization_count int8,
    OUT jit_optimization_time float8,
    OUT jit_emission_count int8,
    OUT jit_emission_time float8,
    OUT jit_deform_count int8,
    OUT jit_deform_time float8,
    OUT parallel_workers_to_launch int8,
    OUT parallel_workers_launched int8,
    OUT stats_since timestamptz,
    OUT minmax_stats_since timestamptz,
    OUT errors int8,
    OUT error_exec_time float8,
    OUT last_executed timestamptz,
    OUT exec_time_p50 float8,
    OUT exec_time_p90 float8,
    OUT exec_time_p95 float8,
    OUT exec_time_p99 float8,
    OUT exec_time_p999 float8,
    OUT plan_time_p50 float8,
    OUT plan_time_p90 float8,
    OUT plan_time_p95 float8,
    OUT plan_time_p99 float8,
    OUT plan_time_p999 float8,
    OUT exec_user_time float8,
    OUT exec_system_time float8,
    OUT plan_user_time float8,
    OUT plan_system_time float8,
    OUT wait_cpu_time float8,
    OUT wait_lock_time float8,
    OUT wait_lwlock_time float8,
    OUT wait_io_time float8,
    OUT wait_ipc_time float8,
    OUT wait_client_time float8,
    OUT wait_other_time float8,
    OUT plans_seen int8,
    OUT last_plan_change timestamptz
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_detail'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng_detail AS
  SELECT * FROM pgss_ng_detail(true, NULL::pg_catalog.timestamptz);

GRANT SELECT ON pgss_ng_detail TO PUBLIC;

-- The execution and planning time histograms of one entry: one row per
-- non-empty bucket.  The view shows all roles' numbers, not which statement
-- is whose: a queryid names one, so another role's needs pg_read_all_stats.
CREATE FUNCTION pgss_ng_exec_time_histogram(userid oid, dbid oid,
    queryid bigint, toplevel bool,
    OUT lower_ms float8, OUT upper_ms float8, OUT count int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_exec_time_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE FUNCTION pgss_ng_plan_time_histogram(userid oid, dbid oid,
    queryid bigint, toplevel bool,
    OUT lower_ms float8, OUT upper_ms float8, OUT count int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_plan_time_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- Extension-wide counters.
CREATE FUNCTION pgss_ng_info(
    OUT dealloc bigint,
    OUT stats_reset timestamptz,
    OUT entries bigint,
    OUT dropped bigint,
    OUT entries_allocated bigint,
    OUT entries_max bigint,
    OUT backstop_skips bigint,
    OUT qtext_bytes bigint,
    OUT qtext_limit_bytes bigint,
    OUT qtext_count bigint,
    OUT qtext_dropped bigint,
    OUT entries_evicted bigint,
    OUT eviction_time float8,
    OUT last_eviction timestamptz
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- The shared memory pgss_ng's data takes, in bytes as DSA allocates
-- them: entry_bytes (entry bodies, removed ones until freed, and hash
-- elements), qtext_allocated_bytes (the texts and their dedup elements;
-- NULL as qtext_bytes is), hist_bytes (the time histograms); hist_dropped:
-- plannings and executions whose time could not be kept in a histogram
-- (shared memory short: that entry's quantiles are NULL until its next
-- min/max reset).  A function of its own: pgss_ng_info() keeps 1.0's
-- columns (pgss_ng_compat's objects depend on them).
CREATE FUNCTION pgss_ng_info_memory(
    OUT entry_bytes bigint,
    OUT qtext_allocated_bytes bigint,
    OUT hist_bytes bigint,
    OUT hist_dropped bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_info_memory'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- The wait sampler's counters.
CREATE FUNCTION pgss_ng_waits_info(
    OUT wait_events_dropped bigint,
    OUT wait_samples_lost bigint,
    OUT wait_samples_added timestamptz
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_waits_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- The plan rows' counters.
CREATE FUNCTION pgss_ng_plans_info(
    OUT plan_rows bigint,
    OUT plan_rows_max bigint,
    OUT plan_rows_evicted bigint,
    OUT plan_calls_dropped bigint,
    OUT plan_text_bytes bigint,
    OUT plan_text_limit_bytes bigint,
    OUT plan_text_dropped bigint,
    OUT plan_text_failures bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_plans_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- pgss_ng_info()'s columns, then the memory's, the sampler's and the plan
-- rows'.
CREATE VIEW pgss_ng_info AS
  SELECT i.*, m.*, w.*, p.*
    FROM pgss_ng_info() i, pgss_ng_info_memory() m, pgss_ng_waits_info() w,
         pgss_ng_plans_info() p;

GRANT SELECT ON pgss_ng_info TO PUBLIC;

-- The evicted remainder: per (userid, dbid, toplevel), the columns of
-- pgss_ng that add up, summed over every entry evicted since the last
-- reset of those rows, then how many entries were folded in and when the
-- first was, then their wait time by wait event type.  sum(calls) over pgss_ng plus over pgss_ng_evicted is every
-- execution recorded.  A role sees only its own rows unless it has the
-- privileges of pg_read_all_stats; userid and dbid are NULL in the
-- overflow rows (more (userid, dbid) pairs than the remainder holds).
CREATE FUNCTION pgss_ng_evicted(
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT plans int8,
    OUT total_plan_time float8,
    OUT calls int8,
    OUT total_exec_time float8,
    OUT rows int8,
    OUT shared_blks_hit int8,
    OUT shared_blks_read int8,
    OUT shared_blks_dirtied int8,
    OUT shared_blks_written int8,
    OUT local_blks_hit int8,
    OUT local_blks_read int8,
    OUT local_blks_dirtied int8,
    OUT local_blks_written int8,
    OUT temp_blks_read int8,
    OUT temp_blks_written int8,
    OUT shared_blk_read_time float8,
    OUT shared_blk_write_time float8,
    OUT local_blk_read_time float8,
    OUT local_blk_write_time float8,
    OUT temp_blk_read_time float8,
    OUT temp_blk_write_time float8,
    OUT wal_records int8,
    OUT wal_fpi int8,
    OUT wal_bytes numeric,
    OUT wal_buffers_full int8,
    OUT jit_functions int8,
    OUT jit_generation_time float8,
    OUT jit_inlining_count int8,
    OUT jit_inlining_time float8,
    OUT jit_optimization_count int8,
    OUT jit_optimization_time float8,
    OUT jit_emission_count int8,
    OUT jit_emission_time float8,
    OUT jit_deform_count int8,
    OUT jit_deform_time float8,
    OUT parallel_workers_to_launch int8,
    OUT parallel_workers_launched int8,
    OUT errors int8,
    OUT error_exec_time float8,
    OUT exec_user_time float8,
    OUT exec_system_time float8,
    OUT plan_user_time float8,
    OUT plan_system_time float8,
    OUT entries int8,
    OUT evicted_since timestamptz,
    OUT wait_cpu_time float8,
    OUT wait_lock_time float8,
    OUT wait_lwlock_time float8,
    OUT wait_io_time float8,
    OUT wait_ipc_time float8,
    OUT wait_client_time float8,
    OUT wait_other_time float8
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_evicted'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng_evicted AS
  SELECT * FROM pgss_ng_evicted();

GRANT SELECT ON pgss_ng_evicted TO PUBLIC;

-- The eviction log: the last pgss_ng.evicted_log entries evicted, oldest
-- first, with the start of their text.  queryid and query of other roles'
-- entries only for the privileges of pg_read_all_stats, as in pgss_ng.
CREATE FUNCTION pgss_ng_evictions(
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT queryid bigint,
    OUT query text,
    OUT calls int8,
    OUT total_exec_time float8,
    OUT stats_since timestamptz,
    OUT evicted_at timestamptz
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_evictions'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng_evictions AS
  SELECT * FROM pgss_ng_evictions();

GRANT SELECT ON pgss_ng_evictions TO PUBLIC;

-- The wait-event profile of each statement entry: every
-- pgss_ng.wait_sample_period ms the pgss_ng writer samples the wait event
-- of each backend running a tracked statement (the innermost one) and
-- adds the sample to that statement; running with no wait event counts as
-- wait_event_type 'CPU' (wait_event NULL).  Names are the server's own
-- (pg_stat_activity's).  time is samples x the period, in ms: an
-- estimate, NULL while sampling is off.  As pg_stat_activity shows other
-- roles' wait events, a role sees only its own rows unless it has the
-- privileges of pg_read_all_stats.
CREATE FUNCTION pgss_ng_waits(
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT queryid bigint,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT samples int8,
    OUT "time" float8
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_waits'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng_waits AS
  SELECT * FROM pgss_ng_waits();

GRANT SELECT ON pgss_ng_waits TO PUBLIC;

-- One row per plan of each statement (pgss_ng.track_plans): its calls,
-- execution times and rows, when it was first and last called, and its
-- EXPLAIN (COSTS OFF) text.  planid is a hash of the plan's shape (node
-- types, relations and indexes scanned, join types, scan directions,
-- subplans), never of constants or costs.  queryid, planid and plan of
-- other roles' statements need the privileges of pg_read_all_stats, as in
-- pgss_ng.
CREATE FUNCTION pgss_ng_plans(IN showtext boolean DEFAULT true,
    OUT userid oid,
    OUT dbid oid,
    OUT toplevel bool,
    OUT queryid bigint,
    OUT planid bigint,
    OUT calls int8,
    OUT total_exec_time float8,
    OUT min_exec_time float8,
    OUT max_exec_time float8,
    OUT mean_exec_time float8,
    OUT rows int8,
    OUT first_call timestamptz,
    OUT last_call timestamptz,
    OUT plan text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgss_ng_plans'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW pgss_ng_plans AS
  SELECT * FROM pgss_ng_plans(true);

GRANT SELECT ON pgss_ng_plans TO PUBLIC;

-- Reset: superusers only unless granted.
CREATE FUNCTION pgss_ng_reset(IN userid oid DEFAULT 0,
    IN dbid oid DEFAULT 0,
    IN queryid bigint DEFAULT 0,
    IN minmax_only boolean DEFAULT false
)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'pgss_ng_reset'
LANGUAGE C STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION pgss_ng_reset(oid, oid, bigint, boolean) FROM PUBLIC;
