/* pgss_ng--1.0--1.1.sql: upgrade pgss_ng 1.0 to 1.1 */
-- What 1.1 changes: see the header of pgss_ng--1.1.sql.  This script must
-- leave a 1.0 installation with exactly the objects of a fresh 1.1 (a test
-- compares them).  New columns of a function are only ever appended to
-- its OUT list (the library fills only the columns that the SQL declares).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgss_ng UPDATE TO '1.1'" to load this file. \quit

-- The views that called a function relying on its defaults, again with
-- every argument of its exact type (as pgss_ng--1.1.sql makes them): the
-- view pgss_ng here, pgss_ng_detail with its function below.  1.0
-- bound each view to the extension's own function already: in its schema,
-- first in search_path when the script ran, a function of the same name
-- could only make the call ambiguous, never be chosen over it.
CREATE OR REPLACE VIEW pgss_ng AS
  SELECT * FROM pgss_ng(true, NULL::pg_catalog.timestamptz);

-- pgss_ng_detail: the wait time columns, then plans_seen and
-- last_plan_change, appended: its view and function are made again
-- (nothing of pgss_ng_compat depends on them), the view as
-- pgss_ng--1.1.sql makes it.
DROP VIEW pgss_ng_detail;
DROP FUNCTION pgss_ng_detail(pg_catalog.bool, pg_catalog.timestamptz);
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

-- pgss_ng_evicted: the wait time columns appended (the same)
DROP VIEW pgss_ng_evicted;
DROP FUNCTION pgss_ng_evicted();
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

-- pgss_ng_info: the counters of the memory, the sampler and the plan rows
-- after pgss_ng_info()'s, through functions of their own (pgss_ng_compat
-- 1.0 depends on pgss_ng_info(), which keeps its columns)
CREATE FUNCTION pgss_ng_info_memory(
    OUT entry_bytes bigint,
    OUT qtext_allocated_bytes bigint,
    OUT hist_bytes bigint,
    OUT hist_dropped bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_info_memory'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE FUNCTION pgss_ng_waits_info(
    OUT wait_events_dropped bigint,
    OUT wait_samples_lost bigint,
    OUT wait_samples_added timestamptz
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_waits_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

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

CREATE OR REPLACE VIEW pgss_ng_info AS
  SELECT i.*, m.*, w.*, p.*
    FROM pgss_ng_info() i, pgss_ng_info_memory() m, pgss_ng_waits_info() w,
         pgss_ng_plans_info() p;

-- the wait-event profile
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

-- plan rows
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
