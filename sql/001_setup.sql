--
-- 001_setup: install pgss_ng next to pg_stat_statements (the reference),
-- check that both run with the same settings and that pgss_ng's view has
-- pg_stat_statements' columns (same order and types) plus stats_since and
-- minmax_stats_since, then its own (errors, error_exec_time,
-- last_executed), and create the helpers the later tests use:
--   pgss_ng_diff               rows on which pgss_ng and pg_stat_statements
--                              disagree (expected empty everywhere)
--   wait_for_other_backends()  waits until this is the only client backend
--
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION pgss_ng;

-- same settings for both (pgss_ng.save is pgss_ng's only extra GUC)
SELECT name, setting, context FROM pg_settings
WHERE name LIKE 'pgss\_ng.%' OR name LIKE 'pg\_stat\_statements.%'
ORDER BY name COLLATE "C";

-- pgss_ng's columns = pg_stat_statements' columns + two timestamps +
-- pgss_ng's own
SELECT coalesce(n.attnum, r.attnum) AS attnum, n.attname AS pgss_ng,
       r.attname AS pg_stat_statements,
       n.atttypid::regtype AS ng_type, r.atttypid::regtype AS ref_type
FROM (SELECT attnum, attname, atttypid FROM pg_attribute
      WHERE attrelid = 'pgss_ng'::regclass AND attnum > 0) n
FULL JOIN (SELECT attnum, attname, atttypid FROM pg_attribute
           WHERE attrelid = 'pg_stat_statements'::regclass AND attnum > 0) r
  ON n.attnum = r.attnum
WHERE n.attname IS DISTINCT FROM r.attname
   OR n.atttypid IS DISTINCT FROM r.atttypid
ORDER BY 1;

SELECT attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'pgss_ng_info'::regclass AND attnum > 0 ORDER BY attnum;

-- Rows of one view that the other does not have, on every column the two
-- must agree on: the key, the text, plans, calls, rows and the block/WAL
-- counters (times differ by nature).  EXCEPT ALL compares multisets and
-- treats NULLs as equal, so this also works for readers that see
-- "<insufficient privilege>" rows with a NULL queryid.  Entries whose
-- executions all failed (plans = calls = 0, errors > 0) are pgss_ng's
-- own: pg_stat_statements has no trace of them.
CREATE VIEW pgss_ng_diff AS
WITH ng AS (
  SELECT userid, dbid, toplevel, queryid, query, plans, calls, rows,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, local_blks_hit, local_blks_read,
         local_blks_dirtied, local_blks_written, temp_blks_read,
         temp_blks_written, wal_records, wal_fpi, wal_bytes
  FROM pgss_ng WHERE plans + calls > 0),
ref AS (
  SELECT userid, dbid, toplevel, queryid, query, plans, calls, rows,
         shared_blks_hit, shared_blks_read, shared_blks_dirtied,
         shared_blks_written, local_blks_hit, local_blks_read,
         local_blks_dirtied, local_blks_written, temp_blks_read,
         temp_blks_written, wal_records, wal_fpi, wal_bytes
  FROM pg_stat_statements)
(SELECT 'only in pgss_ng' AS side, * FROM (TABLE ng EXCEPT ALL TABLE ref) d)
UNION ALL
(SELECT 'only in pg_stat_statements' AS side, * FROM (TABLE ref EXCEPT ALL TABLE ng) d);

GRANT SELECT ON pgss_ng_diff TO PUBLIC;

-- Wait (at most 30 s) until no other client backend exists, so that every
-- pending pgss_ng count of earlier sessions has been flushed at their exit.
-- Call it only with track = top: its nested statements loop a variable
-- number of times.
CREATE FUNCTION wait_for_other_backends() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT FROM pg_stat_activity
                   WHERE backend_type = 'client backend'
                     AND pid <> pg_backend_pid()) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;

-- A first look: reset both, run a few statements, compare.
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 1 AS one;
SELECT 2 AS one;
SELECT 'a' || 'b' AS ab;
SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;
