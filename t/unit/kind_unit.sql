-- t/kind_unit.sql
--	The SQL functions of the kind layer's unit test library (t/kind_unit.c),
--	created by t/130_kind_unit.pl with MODULE_PATHNAME replaced by the path
--	of the library it built.  Each calls one function of the layer's API
--	(src/kind.h) on the fake kind.

-- pgss_ng_kind_create: 'created', 'exists', 'full', 'out of memory', or
-- 'error' (an ERROR was raised, logged and cleared by pgss_ng_kind_guard)
CREATE FUNCTION kind_unit_create(key bigint, tag bigint) RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- the same, with an init callback that raises an ERROR
CREATE FUNCTION kind_unit_create_failing(key bigint) RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- a creation that loses the race for its key to the one its init callback
-- makes first (tagged tag + 1000): '<outer result>/<inner result>'
CREATE FUNCTION kind_unit_race(key bigint, tag bigint) RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_get_pending, then add n to the pending count: false if no
-- entry could be had
CREATE FUNCTION kind_unit_count(key bigint, n bigint) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_flush: whether something is still pending
CREATE FUNCTION kind_unit_flush(force boolean) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_run_eviction
CREATE FUNCTION kind_unit_evict() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_exists
CREATE FUNCTION kind_unit_exists(key bigint) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_read: the entry's merged count, NULL if there is no entry
CREATE FUNCTION kind_unit_read(key bigint) RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_foreach: every live entry
CREATE FUNCTION kind_unit_entries(OUT key bigint, OUT tag bigint,
	OUT count bigint, OUT flushes bigint) RETURNS SETOF record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_remove_matching of keys lo .. hi (all if either is NULL)
CREATE FUNCTION kind_unit_remove(lo bigint, hi bigint) RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C;
-- pgss_ng_kind_update_matching of keys lo .. hi: count := 0
CREATE FUNCTION kind_unit_zero(lo bigint, hi bigint) RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- of the references this session got and has not flushed since, those
-- whose body is not freed and still holds its key
CREATE FUNCTION kind_unit_held_intact() RETURNS integer
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_counters, then the fake kind's own counters: init and free
-- callbacks run, owned chunks not freed, counts handed to the discard
-- callback
CREATE FUNCTION kind_unit_counters(OUT entries bigint,
	OUT entries_allocated bigint, OUT entries_max bigint,
	OUT dealloc bigint, OUT entries_evicted bigint,
	OUT backstop_skips bigint, OUT inits bigint, OUT frees bigint,
	OUT owned bigint, OUT discarded bigint)
RETURNS record
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
-- pgss_ng_kind_reset_counters, pgss_ng_kind_restore_counters
CREATE FUNCTION kind_unit_reset_counters() RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
CREATE FUNCTION kind_unit_restore_counters(dealloc bigint,
	entries_evicted bigint, backstop_skips bigint) RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
