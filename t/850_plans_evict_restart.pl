# Plan rows (pgss_ng_plans) under eviction, across a restart, past
# pgss_ng.plans_max, with pgss_ng.track_plans off, and the plan id that
# PostgreSQL 18 reports.
#
#   1. pgss_ng.max = 100 (plans_max 1000), 150 statements each run twice
#      under a sequential scan and then under an index scan (two plans):
#      statements are evicted; sum(calls) over pgss_ng plus pgss_ng_evicted
#      is every execution; each live statement's plan rows add up to its
#      calls; no plan row is left of an evicted statement
#      (pgss_ng_info.plan_rows is the view's rows, all of live
#      statements).
#   2. A clean restart keeps every plan row (counters, times, text) and
#      pgss_ng_detail's plans_seen and last_plan_change exactly.
#   3. pgss_ng.plans_max = 100: past it the least used plan rows go
#      (plan_rows_evicted), a hot statement's stay, the statement sums stay
#      exact.
#   4. pgss_ng.track_plans off (reload): a new statement gets no plan row.
#   5. PostgreSQL 18: the server reports (pgstat_get_my_plan_id(), read
#      with gdb) the planid of the statement's row.
# The test's own reads run with pgss_ng.track = none.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $nstmt = 150;
my $node = pgss_node(
	'plans_evict_restart',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.save' => 'on',
	'pgss_ng.plans_max' => 1000);

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 100);
$node->safe_psql(
	'postgres', q{
INSERT INTO w (c1, c2) SELECT g, g FROM generate_series(1, 2000) g;
CREATE INDEX w_c1 ON w (c1);
ANALYZE w;
});

sub q_untracked { return untracked_psql($node, $_[0]); }
q_untracked('SELECT pgss_ng_reset()');

# The script: each of statements $first .. $last (two columns of w each)
# twice under a sequential scan (a new statement's plan text is captured
# at its second execution), then once under an index scan; with $hot, one
# more statement 20 times (under the index scan).
sub two_plans_script
{
	my ($first, $last, $hot) = @_;
	my $sql = '';
	for my $i ($first .. $last)
	{
		my ($a, $b) = (2 + $i % 99, 2 + int($i / 99));
		$sql .= "SET enable_indexscan = off; SET enable_bitmapscan = off;\n"
		  . "SELECT c$a, c$b FROM w WHERE c1 = 1;\n"
		  . "SELECT c$a, c$b FROM w WHERE c1 = 2;\n"
		  . "RESET enable_indexscan; RESET enable_bitmapscan;\n"
		  . "SELECT c$a, c$b FROM w WHERE c1 = 3;\n";
	}
	$sql .= "SELECT c2, c3, c4 FROM w WHERE c1 = 4;\n" x 20 if $hot;
	return $sql;
}

# the statements' entries: normalized, or with the text of their first
# execution (an entry made at parse analysis that eviction took before it)
my $stmt_filter = q{query LIKE 'SELECT c% FROM w WHERE c1 = %'};

# --- 1. exact sums under eviction, no plan row left behind ---
$node->safe_psql('postgres', two_plans_script(1, $nstmt));
my $execs = 3 * $nstmt;
my ($live, $evicted) = split /\|/, q_untracked(
	"SELECT (SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE $stmt_filter),
	        (SELECT coalesce(sum(calls), 0) FROM pgss_ng_evicted)");
cmp_ok($evicted, '>', 0, 'statements were evicted');
is($live + $evicted, $execs,
	"sum(calls) over pgss_ng + pgss_ng_evicted = $execs executions");
is( q_untracked(
		"SELECT count(*) FROM pgss_ng s
		 WHERE $stmt_filter AND s.calls <>
		   (SELECT coalesce(sum(p.calls), 0) FROM pgss_ng_plans p
		    WHERE (p.userid, p.dbid, p.toplevel, p.queryid) =
		          (s.userid, s.dbid, s.toplevel, s.queryid))"),
	'0',
	'each live statement\'s plan rows add up to its calls');
is( q_untracked(
		"SELECT count(*) FROM pgss_ng WHERE $stmt_filter AND calls = 3 AND
		 (SELECT count(*) FROM pgss_ng_plans p
		  WHERE (p.userid, p.dbid, p.toplevel, p.queryid) =
		        (pgss_ng.userid, pgss_ng.dbid, pgss_ng.toplevel, pgss_ng.queryid)) <> 2"),
	'0',
	'a statement run under both plans has two plan rows');
is( q_untracked(
		"SELECT count(*) FROM pgss_ng_plans p WHERE NOT EXISTS
		   (SELECT FROM pgss_ng s
		    WHERE (p.userid, p.dbid, p.toplevel, p.queryid) =
		          (s.userid, s.dbid, s.toplevel, s.queryid))"),
	'0', 'no plan row of an evicted statement');
is( q_untracked(
		'SELECT plan_rows = (SELECT count(*) FROM pgss_ng_plans) FROM pgss_ng_info'),
	't', 'pgss_ng_info.plan_rows counts the plan rows');
is(q_untracked('SELECT plan_rows_evicted, plan_calls_dropped FROM pgss_ng_info'),
	'0|0', 'no plan row evicted below plans_max (1000), no call dropped');

# --- 2. a clean restart keeps the plan rows ---
my $plans_sql =
  'SELECT userid, dbid, toplevel, queryid, planid, calls, total_exec_time,
          min_exec_time, max_exec_time, rows, first_call, last_call, plan
   FROM pgss_ng_plans ORDER BY queryid, planid';
my $seen_sql = "SELECT queryid, plans_seen, last_plan_change FROM pgss_ng_detail
   WHERE $stmt_filter ORDER BY queryid";
my $plans_before = q_untracked($plans_sql);
my $seen_before = q_untracked($seen_sql);
like($plans_before, qr/Index Scan using w_c1 on w/, 'index scan texts kept');
like($plans_before, qr/Seq Scan on w/, 'sequential scan texts kept');
$node->restart;
is(q_untracked($plans_sql), $plans_before,
	'clean restart: every plan row is kept exactly');
is(q_untracked($seen_sql), $seen_before,
	'clean restart: plans_seen and last_plan_change are kept');

# --- 3. pgss_ng.plans_max ---
$node->append_conf('postgresql.conf', 'pgss_ng.plans_max = 100');
$node->restart;
q_untracked('SELECT pgss_ng_reset()');
$node->safe_psql('postgres', two_plans_script(1001, 1000 + $nstmt, 1));
$execs = 3 * $nstmt + 20;
my ($nplans, $plans_evicted, $dropped) = split /\|/,
  q_untracked('SELECT plan_rows, plan_rows_evicted, plan_calls_dropped FROM pgss_ng_info');
cmp_ok($nplans, '<=', 100, "plan rows ($nplans) within plans_max");
cmp_ok($plans_evicted, '>', 0, "plan rows evicted ($plans_evicted)");
is($dropped, '0', 'no call dropped');
is( q_untracked(
		"SELECT p.calls FROM pgss_ng_plans p JOIN pgss_ng s
		   USING (userid, dbid, toplevel, queryid)
		 WHERE s.query LIKE 'SELECT c2, c3, c4 FROM w WHERE c1 = %'"),
	'20', 'the hot statement\'s plan row stays');
($live, $evicted) = split /\|/, q_untracked(
	"SELECT (SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE $stmt_filter),
	        (SELECT coalesce(sum(calls), 0) FROM pgss_ng_evicted)");
is($live + $evicted, $execs,
	'past plans_max: statement sums stay exact (pgss_ng + pgss_ng_evicted)');
is( q_untracked(
		"SELECT count(*) FROM pgss_ng s WHERE $stmt_filter AND s.calls <
		   (SELECT coalesce(sum(p.calls), 0) FROM pgss_ng_plans p
		    WHERE (p.userid, p.dbid, p.toplevel, p.queryid) =
		          (s.userid, s.dbid, s.toplevel, s.queryid))"),
	'0', 'no statement\'s plan rows count more than its calls');

# a pgss_ng.plans_max below 100 (but -1) is refused
{
	my ($ret, $out, $err) =
	  $node->psql('postgres', 'ALTER SYSTEM SET pgss_ng.plans_max = 50');
	like($err, qr/invalid value for parameter "pgss_ng.plans_max": 50/,
		'pgss_ng.plans_max = 50 is refused');
}

# --- 4. pgss_ng.track_plans off ---
q_untracked('ALTER SYSTEM SET pgss_ng.track_plans = off');
q_untracked('SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', 'SHOW pgss_ng.track_plans', 'off'),
	'track_plans off after a reload');
$node->safe_psql('postgres', 'SELECT c3, 7 AS untracked_plan FROM w WHERE c1 = 5');
is( q_untracked(
		"SELECT s.calls, s.plans_seen IS NULL,
		        (SELECT count(*) FROM pgss_ng_plans p
		         WHERE (p.userid, p.dbid, p.toplevel, p.queryid) =
		               (s.userid, s.dbid, s.toplevel, s.queryid))
		 FROM pgss_ng_detail s WHERE query LIKE '%untracked_plan%'"),
	'1|t|0', 'track_plans off: the statement is counted, no plan row');
q_untracked('ALTER SYSTEM RESET pgss_ng.track_plans');
q_untracked('SELECT pg_reload_conf()');

# --- 5. PostgreSQL 18 reports the plan id ---
SKIP:
{
	skip 'PlannedStmt.planId, reported by the server, is PostgreSQL 18\'s', 2
	  if $node->pg_version < 18;
	skip 'gdb is not installed', 2 unless gdb_installed();
	ok($node->poll_query_until('postgres', 'SHOW pgss_ng.track_plans', 'on'),
		'track_plans on again');
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	# the statement's plan id stays reported while the session is idle
	$s->query_safe('SELECT c4, 8 AS reported FROM w WHERE c1 = 6');
	my $g = gdb_start($pid);
	gdb_send($g, 'print ((long (*)(void)) pgstat_get_my_plan_id)()',
		'echo @@reported@@\n');
	my $out = gdb_wait($g, qr/\@\@reported\@\@/) // '';
	gdb_release($g);
	my ($reported) = $out =~ /\$\d+ = (-?\d+)/;
	is($reported // 'none',
		q_untracked("SELECT planid FROM pgss_ng_plans p JOIN pgss_ng s
		  USING (userid, dbid, toplevel, queryid)
		  WHERE s.query LIKE '%AS reported FROM w%'"),
		'the server reports the planid of the statement\'s plan row');
	$s->quit;
}

$node->stop;
done_testing();
