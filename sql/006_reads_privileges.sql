--
-- 006_reads_privileges: what an unprivileged role sees.  Every role may read the
-- view; for other roles' statements it gets query "<insufficient
-- privilege>" and a NULL queryid, for its own statements everything.
-- pgss_ng_reset() is denied to it.  Granted pg_read_all_stats, it sees all
-- texts and queryids.  pg_stat_statements must show the very same rows to
-- the same reader (pgss_ng_diff, run as that reader, is empty).
--
-- Expected output: expected/006_reads_privileges.out on every server version.
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

CREATE ROLE regress_pgss_ng_user;
CREATE TABLE priv_t (a int);
INSERT INTO priv_t VALUES (1), (2);
GRANT SELECT ON priv_t TO regress_pgss_ng_user;

-- statements of the superuser
SELECT 'superuser' AS who, count(*) FROM priv_t;
SELECT a FROM priv_t WHERE a = 1;

-- statements of the unprivileged role (same session, SET ROLE)
SET ROLE regress_pgss_ng_user;
SELECT 'unprivileged' AS who, count(*) FROM priv_t;
SELECT a * 10 FROM priv_t ORDER BY a;

-- its view: own rows in full, the superuser's hidden
SELECT userid = 'regress_pgss_ng_user'::regrole AS own, toplevel, calls,
       rows, queryid IS NOT NULL AS has_queryid, query
FROM pgss_ng ORDER BY query COLLATE "C", own, calls, rows;
SELECT * FROM pgss_ng_diff;
-- the showtext = false form hides nothing more than the texts
SELECT userid = 'regress_pgss_ng_user'::regrole AS own, calls,
       queryid IS NOT NULL AS has_queryid, query IS NULL AS no_query
FROM pgss_ng(false) ORDER BY own, has_queryid, calls;

-- reset is not allowed, in any form
SELECT pgss_ng_reset();
SELECT pgss_ng_reset(0, 0, 0, true);
SELECT pgss_ng_reset(userid => 'regress_pgss_ng_user'::regrole);

-- the info view is readable
SELECT dealloc, dropped, stats_reset IS NOT NULL AS has_stats_reset
FROM pgss_ng_info;
RESET ROLE;

-- with pg_read_all_stats every text and queryid is visible
GRANT pg_read_all_stats TO regress_pgss_ng_user;
SET ROLE regress_pgss_ng_user;
SELECT userid = 'regress_pgss_ng_user'::regrole AS own, toplevel, calls,
       rows, queryid IS NOT NULL AS has_queryid, query
FROM pgss_ng ORDER BY query COLLATE "C", own, calls, rows;
SELECT * FROM pgss_ng_diff;
RESET ROLE;

-- both roles' "who" statements: one queryid, one entry per role
SELECT userid = 'regress_pgss_ng_user'::regrole AS own, calls, query
FROM pgss_ng WHERE query LIKE '%AS who%' ORDER BY own;
SELECT count(DISTINCT queryid) AS queryids FROM pgss_ng
WHERE query LIKE '%AS who%';
SELECT * FROM pgss_ng_diff;

REVOKE pg_read_all_stats FROM regress_pgss_ng_user;
DROP TABLE priv_t;
DROP ROLE regress_pgss_ng_user;
