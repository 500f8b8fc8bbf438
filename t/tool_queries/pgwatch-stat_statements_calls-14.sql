-- pgwatch v5.3.0 (github.com/cybertec-postgresql/pgwatch, tag v5.3.0,
-- commit 456bafb811b10b595d032739ae7bbcab98908288), internal/metrics/metrics.yaml:
-- metric stat_statements_calls, sqls key 14 (pgwatch runs the key closest to the server major
-- from below).  Verbatim; replayed by t/620_compat_tool_queries.pl.
select /* pgwatch_generated */
  (extract(epoch from now()) * 1e9)::int8 as epoch_ns,
  coalesce(sum(calls), 0)::int8 as calls,
  coalesce(round(sum(total_exec_time)::numeric, 3), 0)::float8 as total_time,
  round(sum(total_plan_time)::numeric, 3)::double precision as total_plan_time
from
  pg_stat_statements
where
  dbid = (select oid from pg_database where datname = current_database())
