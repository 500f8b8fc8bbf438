--
-- 030_tracking_histogram: the execution-time histogram and its quantiles.
--   Known sleeps in one entry, each bounded from both sides: the nested
--   statement "SELECT 1 FROM pg_sleep(d)" (track = all) of three wrapper
--   functions, h1() (d = 1 ms) x 50, h20() (20 ms) x 5, h200() (200 ms)
--   x 1.  A sleep of d takes at least d, and at most the longest
--   execution of its wrapper (m1, m20, m200: "SELECT h1()" etc. are
--   entries of their own, and a nested execution runs inside its
--   wrapper's), so every bound below holds however loaded the machine,
--   and is tight when it is not (m1 is about 1.1 ms).  The nested entry's
--   histogram holds exactly 56 calls, none in a bucket below 1 ms; at
--   least 6 in buckets reaching above 20 ms and at most 6 in buckets
--   wholly above m1 (only the 20 and 200 ms sleeps can be there); at
--   least 1 above 200 ms and at most 1 wholly above max(m1, m20).  Each
--   quantile lies in the bucket of its rank (nearest rank: ceil(q * 56))
--   and within the bound (gamma - 1) / (gamma + 1) = 4.951%, gamma =
--   2^(1/7), of the range its rank's true value lies in: p50 (rank 28)
--   is a 1 ms sleep's time, in [1, m1]; p90 and p95 (ranks 51, 54) lie in
--   [20, max(m1, m20)] (at most 50 calls are shorter than 20 ms, and the
--   55 calls but the 200 ms one end by then); p99 and p999 (rank 56) are
--   the slowest call, in [200, max(m1, m20, m200)], whose exact time is
--   max_exec_time (within the bound of it, too).  Buckets are log-spaced
--   (upper / lower = gamma).
--   Then a top-level entry (pg_sleep itself): plan-time quantiles are
--   NULL without track_planning, and with it the plan histogram holds
--   every planning.  Times under 10 us and an OLTP spread in one entry
--   (pg_sleep(0.0) x 100, pg_sleep(0.005) x 5, with track_planning):
--   every exec and plan quantile lies in the bucket of its rank, and that
--   bucket has the ratio 2^(1/7) (none is open-ended for such times), so
--   each is within the bound.  A min/max reset empties the histograms (quantiles
--   NULL, calls kept) and counting restarts; a full reset removes them.
--   Bad input: NULL arguments and unknown keys give no rows; another
--   role's statement needs pg_read_all_stats (a role reads its own),
--   while pgss_ng_detail shows that role the entry's calls and quantiles
--   without its queryid and text.  The quantiles are in pgss_ng_detail,
--   which has pgss_ng's rows.
--
-- Expected output: expected/030_tracking_histogram.out on every server version.
--
CREATE FUNCTION h1() RETURNS void LANGUAGE plpgsql AS $$
DECLARE d float8 := 0.001; BEGIN PERFORM 1 FROM pg_sleep(d); END $$;
CREATE FUNCTION h20() RETURNS void LANGUAGE plpgsql AS $$
DECLARE d float8 := 0.02; BEGIN PERFORM 1 FROM pg_sleep(d); END $$;
CREATE FUNCTION h200() RETURNS void LANGUAGE plpgsql AS $$
DECLARE d float8 := 0.2; BEGIN PERFORM 1 FROM pg_sleep(d); END $$;
-- compile them and their statement's plan first: the wrappers' times
-- then hold little besides the sleep
SELECT h1(), h20(), h200();
SELECT pgss_ng_reset() IS NOT NULL;
SET pgss_ng.track = 'all';

\set ECHO none
\o /dev/null
SELECT 'SELECT h1()' FROM generate_series(1, 50) \gexec
SELECT 'SELECT h20()' FROM generate_series(1, 5) \gexec
SELECT h200();
\o
\set ECHO all
SET pgss_ng.track = 'top';

SELECT max(max_exec_time) FILTER (WHERE query = 'SELECT h1()') AS m1,
       max(max_exec_time) FILTER (WHERE query = 'SELECT h20()') AS m20,
       max(max_exec_time) FILTER (WHERE query = 'SELECT h200()') AS m200
FROM pgss_ng WHERE toplevel \gset
SELECT userid AS n_user, dbid AS n_db, queryid AS n_qid, toplevel AS n_top
FROM pgss_ng WHERE query LIKE '% FROM pg_sleep(d)' \gset

SELECT calls, plans, max_exec_time >= 200 AS max_ge_200,
       max_exec_time <= greatest(:m1, :m20, :m200) AS max_le_wrappers,
       exec_time_p50 IS NOT NULL AS has_p50,
       plan_time_p50 IS NULL AND plan_time_p999 IS NULL AS no_plan_quantiles
FROM pgss_ng_detail WHERE queryid = :n_qid;

-- pgss_ng_detail: pgss_ng's rows
SELECT (SELECT count(*) FROM pgss_ng) = (SELECT count(*) FROM pgss_ng_detail)
         AS same_count,
       NOT EXISTS (SELECT userid, dbid, toplevel, queryid, calls FROM pgss_ng
                   EXCEPT
                   SELECT userid, dbid, toplevel, queryid, calls
                   FROM pgss_ng_detail) AS same_rows;

-- exact counts: 56 in all, none below 1 ms; the longer sleeps by bounds
SELECT sum(count) AS total,
       coalesce(sum(count) FILTER (WHERE upper_ms <= 1.0), 0) AS below_1ms,
       sum(count) FILTER (WHERE upper_ms > 20) >= 6 AS from_20ms_ge_6,
       coalesce(sum(count) FILTER (WHERE lower_ms > :m1), 0) <= 6
         AS above_m1_le_6,
       sum(count) FILTER (WHERE upper_ms > 200) >= 1 AS from_200ms_ge_1,
       coalesce(sum(count) FILTER (WHERE lower_ms > greatest(:m1, :m20)), 0) <= 1
         AS above_m20_le_1,
       bool_and(count > 0) AS no_empty_rows,
       bool_and(abs(upper_ms / lower_ms - 2 ^ (1.0 / 7)) < 1e-9) AS log_spaced
FROM pgss_ng_exec_time_histogram(:n_user, :n_db, :n_qid, :'n_top');

-- the bucket holding each quantile's rank (nearest rank: ceil(q * 56)),
-- and the range its rank's true value lies in
CREATE TEMP TABLE h AS
SELECT lower_ms, upper_ms, count,
       sum(count) OVER (ORDER BY lower_ms) AS cum
FROM pgss_ng_exec_time_histogram(:n_user, :n_db, :n_qid, :'n_top');
CREATE TEMP TABLE qs AS
SELECT q.name, q.rank, q.lo_ms, q.hi_ms, v.value,
       (SELECT lower_ms FROM h WHERE cum >= q.rank ORDER BY lower_ms LIMIT 1) AS lo,
       (SELECT upper_ms FROM h WHERE cum >= q.rank ORDER BY lower_ms LIMIT 1) AS hi
FROM (VALUES ('p50', 28, 1, :m1),
             ('p90', 51, 20, greatest(:m1, :m20)),
             ('p95', 54, 20, greatest(:m1, :m20)),
             ('p99', 56, 200, greatest(:m1, :m20, :m200)),
             ('p999', 56, 200, greatest(:m1, :m20, :m200)))
       q(name, rank, lo_ms, hi_ms)
JOIN (SELECT unnest(ARRAY['p50', 'p90', 'p95', 'p99', 'p999']) AS name,
             unnest(ARRAY[exec_time_p50, exec_time_p90, exec_time_p95,
                          exec_time_p99, exec_time_p999]) AS value
      FROM pgss_ng_detail WHERE queryid = :n_qid) v USING (name);
SELECT name, rank, value >= lo AND value <= hi AS in_rank_bucket,
       value >= lo_ms / 1.04951 AND value <= hi_ms * 1.04951
         AS within_bound_of_its_sleeps
FROM qs ORDER BY rank, name;
-- rank 56 is the slowest call: its exact time is max_exec_time
SELECT abs(exec_time_p99 - max_exec_time) / max_exec_time <= 0.04951 AS p99_within_bound,
       abs(exec_time_p999 - max_exec_time) / max_exec_time <= 0.04951 AS p999_within_bound,
       exec_time_p50 <= exec_time_p90 AND exec_time_p90 <= exec_time_p95
         AND exec_time_p95 <= exec_time_p99
         AND exec_time_p99 <= exec_time_p999 AS monotonic,
       exec_time_p50 >= min_exec_time AND exec_time_p999 <= max_exec_time
         AS within_min_max
FROM pgss_ng_detail WHERE queryid = :n_qid;
DROP FUNCTION h1(), h20(), h200();

-- every entry: its histogram holds exactly its calls
SELECT count(*) > 3 AS entries,
       bool_and(calls = (SELECT coalesce(sum(count), 0)
                         FROM pgss_ng_exec_time_histogram(p.userid, p.dbid,
                                                          p.queryid, p.toplevel)))
         AS sums_equal_calls
FROM pgss_ng p;

-- plan times, with track_planning, of a top-level entry
SET pgss_ng.track_planning = on;
\set ECHO none
\o /dev/null
SELECT 'SELECT pg_sleep(0.001)' FROM generate_series(1, 3) \gexec
\o
\set ECHO all
SET pgss_ng.track_planning = off;
SELECT userid AS h_user, dbid AS h_db, queryid AS h_qid, toplevel AS h_top
FROM pgss_ng WHERE query = 'SELECT pg_sleep($1)' \gset
SELECT calls, plans, plan_time_p50 > 0 AS has_plan_p50,
       plan_time_p50 <= plan_time_p999 AS plan_monotonic,
       (SELECT sum(count) FROM pgss_ng_plan_time_histogram(:h_user, :h_db,
                                                           :h_qid, :'h_top'))
         AS plan_hist_total
FROM pgss_ng_detail WHERE queryid = :h_qid;

-- times under 10 us and an OLTP spread, exec and plan: each quantile in
-- the bucket of its rank, a bucket of ratio 2^(1/7)
SET pgss_ng.track_planning = on;
\set ECHO none
\o /dev/null
SELECT 'SELECT 1 AS fast FROM pg_sleep(0.0)' FROM generate_series(1, 100) \gexec
SELECT 'SELECT 1 AS fast FROM pg_sleep(0.005)' FROM generate_series(1, 5) \gexec
\o
\set ECHO all
SET pgss_ng.track_planning = off;
SELECT userid AS f_user, dbid AS f_db, queryid AS f_qid, toplevel AS f_top
FROM pgss_ng WHERE query = 'SELECT $1 AS fast FROM pg_sleep($2)' \gset
CREATE TEMP TABLE fh AS
SELECT phase, lower_ms, upper_ms,
       sum(count) OVER (PARTITION BY phase ORDER BY lower_ms) AS cum,
       sum(count) OVER (PARTITION BY phase) AS n
FROM (SELECT 'exec' AS phase, * FROM pgss_ng_exec_time_histogram(:f_user, :f_db, :f_qid, :'f_top')
      UNION ALL
      SELECT 'plan', * FROM pgss_ng_plan_time_histogram(:f_user, :f_db, :f_qid, :'f_top')) h;
SELECT phase, max(n) AS n FROM fh GROUP BY phase ORDER BY phase;
SELECT q.phase, q.name,
       b.lower_ms <= q.value AND q.value <= b.upper_ms AS in_rank_bucket,
       b.upper_ms / nullif(b.lower_ms, 0) < 2 ^ (1.0 / 7) + 1e-9
         AS bucket_of_ratio_gamma
FROM (SELECT 'exec' AS phase, unnest(ARRAY['p50', 'p90', 'p95', 'p99', 'p999']) AS name,
             unnest(ARRAY[0.5, 0.9, 0.95, 0.99, 0.999]) AS p,
             unnest(ARRAY[exec_time_p50, exec_time_p90, exec_time_p95,
                          exec_time_p99, exec_time_p999]) AS value
      FROM pgss_ng_detail WHERE queryid = :f_qid
      UNION ALL
      SELECT 'plan', unnest(ARRAY['p50', 'p90', 'p95', 'p99', 'p999']),
             unnest(ARRAY[0.5, 0.9, 0.95, 0.99, 0.999]),
             unnest(ARRAY[plan_time_p50, plan_time_p90, plan_time_p95,
                          plan_time_p99, plan_time_p999])
      FROM pgss_ng_detail WHERE queryid = :f_qid) q
CROSS JOIN LATERAL (SELECT lower_ms, upper_ms FROM fh
                    WHERE fh.phase = q.phase AND cum >= ceil(q.p * n)
                    ORDER BY lower_ms LIMIT 1) b
ORDER BY q.phase, q.p;

-- a min/max reset empties both histograms; calls stay
SELECT pgss_ng_reset(0, 0, :h_qid, true) IS NOT NULL;
SELECT calls, plans, exec_time_p50 IS NULL AS p50_null,
       exec_time_p999 IS NULL AS p999_null, plan_time_p50 IS NULL AS plan_null
FROM pgss_ng_detail WHERE queryid = :h_qid;
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
SELECT count(*) FROM pgss_ng_plan_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
-- counting restarts: one call, then two of 1 ms (usually shorter, which
-- widens the histogram's window downwards: t/050 checks that exactly)
SELECT pg_sleep(0.02);
SELECT calls, exec_time_p50 >= 20 / 1.04951 AS p50_again,
       exec_time_p50 = exec_time_p999 AS one_call
FROM pgss_ng_detail WHERE queryid = :h_qid;
SELECT sum(count) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
SELECT pg_sleep(0.001);
SELECT pg_sleep(0.001);
SELECT sum(count) AS total,
       sum(count) FILTER (WHERE upper_ms > 20) >= 1 AS holds_the_20ms_call,
       coalesce(sum(count) FILTER (WHERE upper_ms <= 1), 0) AS below_1ms
FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');

-- bad input: no rows, no error
SELECT count(*) FROM pgss_ng_exec_time_histogram(NULL, :h_db, :h_qid, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, NULL, :h_qid, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, NULL, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, NULL);
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, 0, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, -1, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, 0, :h_qid, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, NOT :'h_top'::bool);
SELECT count(*) FROM pgss_ng_plan_time_histogram(:h_user, :h_db, 12345, :'h_top');

-- privileges: the views show every role every entry's numbers, its
-- quantiles too, but which statement it is (queryid, text) only for the
-- role's own statements or with pg_read_all_stats; the histogram functions
-- name the statement by its queryid, so another role's needs
-- pg_read_all_stats
SELECT calls AS h_calls, exec_time_p50 AS h_p50, exec_time_p999 AS h_p999
FROM pgss_ng_detail WHERE queryid = :h_qid \gset
CREATE ROLE regress_pgss_ng_hist_user;
CREATE ROLE regress_pgss_ng_hist_stats IN ROLE pg_read_all_stats;
SET ROLE regress_pgss_ng_hist_user;
SELECT count(*) AS same_numbers_unnamed FROM pgss_ng_detail
WHERE userid = :h_user AND queryid IS NULL
  AND query = '<insufficient privilege>' AND calls = :h_calls
  AND exec_time_p50 = :h_p50 AND exec_time_p999 = :h_p999;
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
SELECT count(*) FROM pgss_ng_plan_time_histogram(:h_user, :h_db, 12345, :'h_top');
SELECT count(*) FROM pgss_ng_exec_time_histogram(NULL, :h_db, :h_qid, :'h_top');
-- its own statement; other roles' rows show queryid NULL: no rows, no error
SELECT 'own' AS own_stmt;
SELECT p.query, h.count
FROM pgss_ng p,
     pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
WHERE p.query = 'SELECT $1 AS own_stmt';
SELECT (SELECT count(*) FROM pgss_ng WHERE queryid IS NULL) > 0 AS others_hidden,
       count(*) AS their_buckets
FROM pgss_ng p,
     pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
WHERE p.queryid IS NULL;
RESET ROLE;
SET ROLE regress_pgss_ng_hist_stats;
SELECT sum(count) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
RESET ROLE;
DROP ROLE regress_pgss_ng_hist_user, regress_pgss_ng_hist_stats;

-- a full reset removes the entry and its histograms
SELECT pgss_ng_reset() IS NOT NULL;
SELECT count(*) FROM pgss_ng_exec_time_histogram(:h_user, :h_db, :h_qid, :'h_top');
