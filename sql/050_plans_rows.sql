--
-- 050_plans_rows: plan rows (pgss_ng_plans, pgss_ng.track_plans on).
--   * A statement run under an index scan, then (enable_indexscan off)
--     under a sequential scan, has exactly two plan rows, whose calls and
--     rows add up to the statement's, each with its EXPLAIN (COSTS OFF)
--     text: captured at the first execution of a new plan of a statement
--     that ran before (the sequential scan), at the second of a new
--     statement's (the index scan); the same plan with other constants is
--     one row.  pgss_ng_detail: plans_seen 2 and last_plan_change set;
--     NULL for a statement with no plan (utility).
--   * A prepared statement on a partitioned table: its custom plans (the
--     partition pruned at planning) and its generic plan (an Append
--     pruned at run time) have rows of their own, one per shape.
--   * Privileges: a role sees its own plan rows whole; of another role's
--     the numbers only (queryid, planid NULL, plan "<insufficient
--     privilege>"), unless it has the privileges of pg_read_all_stats.
--   * pgss_ng_plans(false) shows no text; a reset of a statement removes
--     its plan rows.
--
-- Expected output: expected/050_plans_rows.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL;
CREATE TABLE plan_t (a int PRIMARY KEY, b int);
INSERT INTO plan_t SELECT g, g FROM generate_series(1, 1000) g;
ANALYZE plan_t;
SELECT pgss_ng_reset() IS NOT NULL;

SELECT b FROM plan_t WHERE a = 1;
SELECT b FROM plan_t WHERE a = 2;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT b FROM plan_t WHERE a = 3;
SELECT b FROM plan_t WHERE a = 4;
SELECT b FROM plan_t WHERE a = 5;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT b FROM plan_t WHERE a = 6;

-- two rows, 3 index scans and 3 sequential scans
SELECT p.calls, p.rows, p.plan, p.planid <> 0 AS has_planid,
       p.first_call <= p.last_call AS ordered,
       p.min_exec_time <= p.mean_exec_time AND
       p.mean_exec_time <= p.max_exec_time AS min_mean_max
FROM pgss_ng_plans p JOIN pgss_ng s USING (userid, dbid, toplevel, queryid)
WHERE s.query = 'SELECT b FROM plan_t WHERE a = $1'
ORDER BY p.plan COLLATE "C";
-- their calls, rows and times add up to the statement's
SELECT s.calls, sum(p.calls) AS plan_calls, s.rows, sum(p.rows) AS plan_rows,
       abs(s.total_exec_time - sum(p.total_exec_time)) < 0.001 AS same_time,
       count(DISTINCT p.planid) AS planids
FROM pgss_ng s JOIN pgss_ng_plans p USING (userid, dbid, toplevel, queryid)
WHERE s.query = 'SELECT b FROM plan_t WHERE a = $1'
GROUP BY s.calls, s.rows, s.total_exec_time;
SELECT query, plans_seen, last_plan_change IS NOT NULL AS plan_changed,
       last_plan_change <= last_executed AS before_last_executed
FROM pgss_ng_detail
WHERE query IN ('SELECT b FROM plan_t WHERE a = $1', 'RESET enable_indexscan')
ORDER BY query COLLATE "C";

-- custom plans (partition pruned while planning) and the generic plan
CREATE TABLE plan_p (k int, v int) PARTITION BY LIST (k);
CREATE TABLE plan_p1 PARTITION OF plan_p FOR VALUES IN (1);
CREATE TABLE plan_p2 PARTITION OF plan_p FOR VALUES IN (2);
INSERT INTO plan_p VALUES (1, 10), (1, 11), (2, 20);
PREPARE plan_q(int) AS SELECT count(*) FROM plan_p WHERE k = $1;
SET plan_cache_mode = force_custom_plan;
EXECUTE plan_q(1);
EXECUTE plan_q(1);
EXECUTE plan_q(2);
SET plan_cache_mode = force_generic_plan;
EXECUTE plan_q(1);
EXECUTE plan_q(2);
EXECUTE plan_q(2);
RESET plan_cache_mode;
-- one row per shape: pruned to plan_p1, pruned to plan_p2, generic
SELECT p.calls, p.rows, p.plan LIKE '%Append%' AS generic,
       p.plan LIKE '%Subplans Removed%' AS pruned_at_run_time,
       p.plan LIKE '%on plan_p1%' AS scans_p1,
       p.plan LIKE '%on plan_p2%' AS scans_p2
FROM pgss_ng_plans p JOIN pgss_ng s USING (userid, dbid, toplevel, queryid)
WHERE s.query LIKE 'PREPARE plan_q%'
ORDER BY generic, scans_p1 DESC;
SELECT s.calls, sum(p.calls) AS plan_calls
FROM pgss_ng s JOIN pgss_ng_plans p USING (userid, dbid, toplevel, queryid)
WHERE s.query LIKE 'PREPARE plan_q%'
GROUP BY s.calls;
DEALLOCATE plan_q;

-- privileges
CREATE ROLE regress_plans_user;
GRANT SELECT ON plan_t TO regress_plans_user;
SET ROLE regress_plans_user;
SELECT b FROM plan_t WHERE a = 7;
SELECT b FROM plan_t WHERE a = 8;
SELECT userid = 'regress_plans_user'::regrole AS own, count(*) > 0 AS some,
       bool_and(queryid IS NOT NULL) AS queryids,
       bool_and(planid IS NOT NULL) AS planids,
       bool_and(calls > 0) AS calls,
       bool_and(plan = '<insufficient privilege>') AS texts_hidden,
       string_agg(plan, ', ') FILTER (WHERE plan LIKE '%plan_t%') AS own_texts
FROM pgss_ng_plans GROUP BY own ORDER BY own;
RESET ROLE;
GRANT pg_read_all_stats TO regress_plans_user;
SET ROLE regress_plans_user;
SELECT count(*) > 0 AS some,
       bool_and(queryid IS NOT NULL AND planid IS NOT NULL AND
                plan <> '<insufficient privilege>') AS others_rows_whole
FROM pgss_ng_plans WHERE userid <> 'regress_plans_user'::regrole;
RESET ROLE;

-- no text without showtext
SELECT count(*) > 0 AS rows, count(plan) AS texts FROM pgss_ng_plans(false);

-- a reset of the statement removes its plan rows
SELECT pgss_ng_reset(0, 0, queryid) IS NOT NULL FROM pgss_ng
WHERE query = 'SELECT b FROM plan_t WHERE a = $1'
  AND userid = current_user::regrole;
SELECT count(*) AS plan_rows_left FROM pgss_ng_plans p
WHERE p.plan LIKE '% on plan_t%' AND userid = current_user::regrole;

DROP TABLE plan_t, plan_p;
DROP ROLE regress_plans_user;
