# 800_waits_profile.pl
#
# The wait-event profile of each statement (pgss_ng_waits, the wait_*_time
# columns of pgss_ng_detail), sampled every 5 ms, against what the test
# controls and against pg_stat_activity sampled by the test itself (the
# oracle: every 10 ms, the measured backend's wait event, or CPU while it
# is active with none):
#   - SELECT pg_sleep(1): >= 90% of its samples are Timeout/PgSleep;
#   - an UPDATE that waits about 1 s for a row lock another session holds
#     (released by the test once the oracle has watched it wait): >= 80%
#     Lock;
#   - a statement that burns CPU for 1 s: >= 80% CPU;
#   - each of them, longer than 100 periods: samples x period within 25%
#     of its total_exec_time, and its fraction within 15 points of the
#     oracle's;
#   - with track = all, a function's inner statement gets its own waits,
#     not its caller;
#   - a role without pg_read_all_stats sees only its own rows;
#   - a reset clears the rows (a partial one only its entry's), a clean
#     restart keeps them, a reload with the period 0 stops sampling (the
#     time columns are NULL);
#   - an entry never sampled takes no memory for samples (entry_bytes: its
#     body and hash element, 688 bytes), one sampled a chunk of 56 bytes;
#   - 1.0 upgraded to 1.1 has the objects of a fresh 1.1.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use PgssNgTest;

my $period = 5;
my $node = pgss_node(
	'waits',
	'pgss_ng.wait_sample_period' => $period,
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'on');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE t (id int PRIMARY KEY, v int);
INSERT INTO t VALUES (1, 0);
-- CPU for $1 seconds, no wait event, no nested statement
CREATE FUNCTION burn(secs float8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	stop timestamptz := clock_timestamp() + make_interval(secs => secs);
	n bigint := 0;
BEGIN
	WHILE clock_timestamp() < stop LOOP
		n := n + 1;
	END LOOP;
	RETURN n;
END $$;
-- the oracle: n samples of backend p's wait event, one every 10 ms
CREATE FUNCTION oracle(p int, n int, OUT kind text, OUT samples bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	k text;
	seen text[] := '{}';
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT CASE WHEN state = 'active'
					THEN coalesce(wait_event_type || ':' || wait_event, 'CPU')
					ELSE 'not active' END
		INTO k FROM pg_stat_activity WHERE pid = p;
		seen := seen || coalesce(k, 'gone');
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN QUERY SELECT x, count(*) FROM unnest(seen) x GROUP BY x;
END $$;
-- with track = all: two inner statements (FROM: not simple expressions)
CREATE FUNCTION nested() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(0.5) FROM (VALUES (1)) v;
	PERFORM burn(0.3) FROM (VALUES (2)) v;
END $$;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT EXECUTE ON FUNCTION burn(float8) TO alice, bob;
});

# The observer: untracked, reads and runs the oracle.
my $obs = $node->background_psql('postgres');
$obs->query_safe('SET pgss_ng.track = none');
$obs->set_query_timer_restart;

# queryid of the one entry whose text is $text (untracked read)
sub queryid_of
{
	my ($text) = @_;
	return untracked_psql($node,
		"SELECT queryid FROM pgss_ng WHERE query = '$text'");
}

# The samples of the entry of $qid (and $where), once the sampler has
# added every sample taken so far: total, and a hash event => samples
# ('CPU' for no wait event).
sub samples_of
{
	my ($qid, $where) = @_;
	$where //= '';
	waits_added($node);
	my $cur = untracked_psql($node,
		"SELECT string_agg(wait_event_type || ':' || coalesce(wait_event, ''),
						   ',' ORDER BY wait_event_type, wait_event)
				|| '=' || string_agg(samples::text, ','
									 ORDER BY wait_event_type, wait_event)
		 FROM pgss_ng_waits WHERE queryid = $qid $where");
	my ($k, $v) = split /=/, $cur;
	my @k = split /,/, $k // '';
	my @v = split /,/, $v // '';
	my %by;
	my $total = 0;
	for my $i (0 .. $#k)
	{
		my $name = $k[$i] eq 'CPU:' ? 'CPU' : $k[$i];
		$by{$name} = $v[$i];
		$total += $v[$i];
	}
	return ($total, \%by);
}

# The fraction of the oracle's samples of kind $kind (over those where the
# backend was active).
sub oracle_fraction
{
	my ($out, $kind) = @_;
	my ($n, $all) = (0, 0);
	for my $line (split /\n/, $out)
	{
		my ($k, $c) = split /\|/, $line;
		next if $k eq 'not active' || $k eq 'gone';
		$all += $c;
		$n += $c if $k eq $kind;
	}
	return $all ? $n / $all : 0;
}

# Check one measured statement: its fraction of $kind (>= $min), the
# oracle's (>= $min and within 0.15 of ours), and, as it ran longer than
# 100 periods, samples x period within 25% of its total_exec_time.
sub check_statement
{
	my ($name, $text, $kind, $min, $oracle_out) = @_;
	my $qid = queryid_of($text);
	isnt($qid, '', "$name: has an entry");
	my ($total, $by) = samples_of($qid);
	my $frac = $total ? ($by->{$kind} // 0) / $total : 0;
	my $ofrac = oracle_fraction($oracle_out, $kind);
	cmp_ok($frac, '>=', $min, "$name: >= $min of its samples are $kind")
	  or diag(explain($by));
	cmp_ok($ofrac, '>=', $min, "$name: the oracle agrees (>= $min)")
	  or diag($oracle_out);
	cmp_ok(abs($frac - $ofrac), '<=', 0.15,
		"$name: within 15 points of the oracle ($frac, $ofrac)");
	my $exec = untracked_psql($node,
		"SELECT total_exec_time FROM pgss_ng WHERE queryid = $qid");
	cmp_ok($exec, '>', 100 * $period, "$name: ran longer than 100 periods");
	my $est = $total * $period;
	cmp_ok(abs($est - $exec) / $exec, '<=', 0.25,
		"$name: samples x period ($est ms) within 25% of total_exec_time ($exec ms)");
	my $detail = untracked_psql($node,
		"SELECT wait_cpu_time + wait_lock_time + wait_lwlock_time + wait_io_time
				+ wait_ipc_time + wait_client_time + wait_other_time
		 FROM pgss_ng_detail WHERE queryid = $qid");
	is($detail, $est, "$name: pgss_ng_detail's wait times add up to it");
	return $qid;
}

# A session B for one statement: its pid.
sub session
{
	my $s = $node->background_psql('postgres');
	$s->set_query_timer_restart;
	return ($s, $s->query_safe('SELECT pg_backend_pid()'));
}

# Wait until backend $pid is active with wait event $event ('' for none).
sub wait_until_in
{
	my ($pid, $event) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT state = 'active' AND coalesce(wait_event_type || ':' || wait_event, '') = '$event'
			 FROM pg_stat_activity WHERE pid = $pid"),
		"backend $pid is in '$event'");
	return;
}

# --- pg_sleep ---------------------------------------------------------------
my %sleep_qid;
{
	my ($b, $pid) = session();
	my $mark = send_async($b, 'SELECT pg_sleep(1);');
	wait_until_in($pid, 'Timeout:PgSleep');
	my $oracle = $obs->query_safe("SELECT * FROM oracle($pid, 50)");
	isnt(wait_async($b, $mark), undef, 'pg_sleep: done');
	$sleep_qid{top} = check_statement('pg_sleep', 'SELECT pg_sleep($1)',
		'Timeout:PgSleep', 0.9, $oracle);
	$b->quit;
}

# --- a row lock ---------------------------------------------------------------
{
	my ($a) = session();
	my ($b, $pid) = session();
	$a->query_safe('BEGIN; SELECT v FROM t WHERE id = 1 FOR UPDATE;');
	my $mark = send_async($b, 'UPDATE t SET v = v + 1 WHERE id = 1;');
	wait_until_in($pid, 'Lock:transactionid');
	# the oracle watches B wait for about 1 s; then A lets it go
	my $oracle = $obs->query_safe("SELECT * FROM oracle($pid, 100)");
	$a->query_safe('COMMIT');
	isnt(wait_async($b, $mark), undef, 'row lock: the UPDATE is done');
	check_statement('row lock', 'UPDATE t SET v = v + $1 WHERE id = $2',
		'Lock:transactionid', 0.8, $oracle);
	$a->quit;
	$b->quit;
}

# --- CPU ----------------------------------------------------------------------
{
	my ($b, $pid) = session();
	my $mark = send_async($b, 'SELECT burn(1.0) > 0;');
	wait_until_in($pid, '');
	my $oracle = $obs->query_safe("SELECT * FROM oracle($pid, 50)");
	isnt(wait_async($b, $mark), undef, 'CPU: done');
	check_statement('CPU', 'SELECT burn($1) > $2', 'CPU', 0.8, $oracle);
	$b->quit;
}

# --- a function's inner statement (track = all) ----------------------------------
{
	my ($b) = session();
	$b->query_safe("SET pgss_ng.track = 'all'");
	$b->query_safe('SELECT nested()');
	$b->quit;
	my $inner = queryid_of('SELECT pg_sleep($1) FROM (VALUES ($2)) v');
	my $outer = queryid_of('SELECT nested()');
	my ($itotal, $iby) = samples_of($inner, 'AND NOT toplevel');
	my ($ototal, $oby) = samples_of($outer, 'AND toplevel');
	cmp_ok(($iby->{'Timeout:PgSleep'} // 0) / ($itotal || 1), '>=', 0.9,
		'track = all: the inner pg_sleep has >= 90% of its samples in PgSleep')
	  or diag(explain($iby));
	cmp_ok($oby->{'Timeout:PgSleep'} // 0, '<=', 0.1 * $itotal,
		'track = all: its caller has hardly any (they are the inner statement\'s)')
	  or diag(explain($oby));
	my $burn = queryid_of('SELECT burn($1) FROM (VALUES ($2)) v');
	my ($btotal, $bby) = samples_of($burn, 'AND NOT toplevel');
	cmp_ok(($bby->{CPU} // 0) / ($btotal || 1), '>=', 0.8,
		'track = all: the inner burn is CPU');
}

# --- privacy ----------------------------------------------------------------------
{
	for my $role (qw(alice bob))
	{
		$node->safe_psql('postgres', 'SELECT burn(0.05) > 0',
			extra_params => [ '-U', $role ]);
	}
	waits_added($node);
	my $alice = $node->safe_psql('postgres',
		q{SELECT count(*) > 0, bool_and(userid = 'alice'::regrole::oid)
		  FROM pgss_ng_waits},
		extra_params => [ '-U', 'alice' ]);
	is($alice, 't|t', 'alice sees her rows and only hers');
	is( untracked_psql(
			$node,
			q{SELECT count(DISTINCT userid) FROM pgss_ng_waits
			  WHERE userid IN ('alice'::regrole::oid, 'bob'::regrole::oid)}),
		'2',
		'a superuser sees both roles\' rows');
}

# --- restart keeps them -------------------------------------------------------------
my $all = q{SELECT userid, dbid, toplevel, queryid, wait_event_type,
				   wait_event, samples
			FROM pgss_ng_waits ORDER BY 1, 2, 3, 4, 5, 6};
{
	waits_added($node);
	my $before = untracked_psql($node, $all);
	my $types = untracked_psql($node,
		"SELECT wait_cpu_time, wait_lock_time, wait_other_time FROM pgss_ng_detail
		 ORDER BY userid, dbid, queryid, toplevel");
	$obs->quit;
	$node->restart;
	is(untracked_psql($node, $all), $before, 'a clean restart keeps every row');
	is( untracked_psql(
			$node,
			"SELECT wait_cpu_time, wait_lock_time, wait_other_time FROM pgss_ng_detail
			 ORDER BY userid, dbid, queryid, toplevel"),
		$types,
		'and every entry\'s wait times');
}

# --- resets -------------------------------------------------------------------------
{
	untracked_psql($node, "SELECT pgss_ng_reset(0, 0, $sleep_qid{top})");
	is( untracked_psql(
			$node,
			"SELECT count(*) FROM pgss_ng_waits WHERE queryid = $sleep_qid{top}"),
		'0',
		'a reset of one queryid removes its rows');
	cmp_ok(untracked_psql($node, 'SELECT count(*) FROM pgss_ng_waits'),
		'>', 0, 'and only its rows');
	untracked_psql($node, 'SELECT pgss_ng_reset()');
	is(untracked_psql($node, 'SELECT count(*) FROM pgss_ng_waits'),
		'0', 'a full reset removes every row');
}

# --- sampling off --------------------------------------------------------------------
{
	# untracked: no entry but those of the statements below
	my $period_is = sub {
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		return $node->poll_query_until('postgres',
			'SHOW pgss_ng.wait_sample_period', $_[0]);
	};
	untracked_psql($node,
		'ALTER SYSTEM SET pgss_ng.wait_sample_period = 0; SELECT pg_reload_conf()');
	ok($period_is->('0'), 'a new session has the period 0');
	$node->safe_psql('postgres', 'SELECT pg_sleep(0.2)');
	is( untracked_psql(
			$node,
			q{SELECT wait_other_time IS NULL FROM pgss_ng_detail
			  WHERE query = 'SELECT pg_sleep($1)'}),
		't',
		'sampling off: the wait time columns are NULL');
	untracked_psql($node,
		'ALTER SYSTEM RESET pgss_ng.wait_sample_period; SELECT pg_reload_conf()');
	ok($period_is->('5ms'), 'sampling on again');
	waits_added($node);
	is( untracked_psql(
			$node,
			q{SELECT count(*) FROM pgss_ng_waits w JOIN pgss_ng s USING (queryid)
			  WHERE s.query = 'SELECT pg_sleep($1)'}),
		'0',
		'the statement run while it was off has no samples');
	# an entry's wait samples are a chunk of its own, made at its first
	# samples: an entry without is its body (DSA's 640-byte class) and its
	# hash element (48 bytes), on 64-bit builds
	my $memory = q{SELECT entries || ' ' || entries_allocated || ' ' ||
	                      (entry_bytes - 688 * entries) FROM pgss_ng_info};
	is(untracked_psql($node, $memory), '1 1 0',
		'never sampled: 688 bytes, its body and hash element, no chunk of samples');
	$node->safe_psql('postgres', q{SELECT pg_sleep(0.2), 'sampled'});
	waits_added($node);
	cmp_ok(
		untracked_psql(
			$node,
			q{SELECT wait_other_time FROM pgss_ng_detail
			  WHERE query = 'SELECT pg_sleep($1), $2'}),
		'>', 0,
		'a statement run with sampling on has samples');
	is(untracked_psql($node, $memory), '2 2 56',
		'... and one chunk of them (52 bytes, in DSA\'s 56-byte class)');
}

# --- 1.0 upgraded is 1.1 ----------------------------------------------------------------
{
	my $objects = q{
SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pgss_ng'
UNION ALL
SELECT c.relname, pg_get_viewdef(c.oid), array_to_string(c.relacl, ',')
FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pgss_ng'
ORDER BY 1, 2};
	$node->safe_psql('postgres', 'CREATE DATABASE up; CREATE DATABASE fresh');
	$node->safe_psql('up',
		"CREATE EXTENSION pgss_ng VERSION '1.0'; ALTER EXTENSION pgss_ng UPDATE");
	$node->safe_psql('fresh', 'CREATE EXTENSION pgss_ng');
	is($node->safe_psql('up', $objects), $node->safe_psql('fresh', $objects),
		'1.0 updated to 1.1 has the objects of a fresh 1.1');
}

stop_and_check_log($node);
done_testing();
