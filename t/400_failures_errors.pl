# Failed executions caused by other sessions or by the client: errors and
# error_exec_time on the statement's entry, calls untouched, and the
# session's next statements counted exactly.
#
# - pg_cancel_backend() from another session while the target sleeps
#   (the canceller waits until pg_stat_activity shows the target waiting
#   in PgSleep, then half a second more).  error_exec_time lies between
#   the client-side gaps (monotonic clock) from that sight to the cancel,
#   which the statement certainly ran through, and from sending the
#   statement to receiving its error, which holds all of it.
# - A deadlock between two sessions on advisory locks: the waiter's lock
#   request is seen in pg_locks before the other session closes the cycle;
#   only the second session checks for deadlocks (deadlock_timeout 10ms
#   there, 1h in the first), so it is the victim.
# - A client that disconnects while its statement sleeps
#   (client_connection_check_interval): the FATAL skips every PG_CATCH, so
#   the statement is noted at the backend's exit.  The same for
#   pg_terminate_backend(), also when the terminated statement is the
#   session's very first (nothing attached the backend before: its first
#   failure frame registered the exit sequence, which attaches then).
# - A failure nested deeper than the 64 frames and notes of a backend
#   (track = all): a function recursing through "PERFORM 1 FROM f(n - 1)"
#   raises at depth n, so the error passes through n + 1 tracked
#   executions.  At depth 10 each counts one error, nothing dropped; at
#   depth 100 the outer 64 count (1 top-level, 63 nested) and the other
#   37 count in dropped.
# - Incremental reads while other clients run: a read with changed_since
#   = the start of the previous read returns exactly the entries the
#   other sessions changed in between.
#
# Every read of the view, and every poll, runs untracked (pgss_ng.track =
# none).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC usleep);

sub now_s { return clock_gettime(CLOCK_MONOTONIC); }

my $node = pgss_node(
	'errors',
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');

# The observer: untracked.
my $obs = $node->background_psql('postgres');
$obs->query_safe('SET pgss_ng.track = none');

sub obs { return $obs->query_safe(shift); }

# "calls errors" of the top-level entry whose text is $text.
sub counts
{
	my $q = shift =~ s/'/''/gr;
	return obs("SELECT coalesce(string_agg(calls || ' ' || errors, ','), 'none') "
		  . "FROM pgss_ng WHERE toplevel AND query = '$q'");
}

# Wait until pid shows the condition $cond in pg_stat_activity.
sub wait_activity
{
	my ($pid, $cond, $what) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND $cond",
			'1'),
		$what);
}

sub wait_gone
{
	my ($pid, $what) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid", '0'),
		$what);
}

# ------------------------------------------------------------ cancel
obs('SELECT pgss_ng_reset()');
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my $t_sent = now_s();
	$s->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(600);\n");
	wait_activity($pid, "wait_event = 'PgSleep'", 'cancel: target sleeping');
	my $t_seen = now_s();
	usleep(1000) while now_s() < $t_seen + 0.5;
	my $t_cancel = now_s();
	is(obs("SELECT pg_cancel_backend($pid)"), 't', 'cancel: sent');
	$s->query('SELECT 1 AS after_cancel');
	my $t_error = now_s();
	like($s->{stderr}, qr/canceling statement due to user request/,
		'cancel: the statement was cancelled');
	$s->{stderr} = '';
	$s->query_safe('SELECT 1 AS after_cancel');
	is(counts('SELECT pg_sleep($1)'), '0 1', 'cancel: one error, no call');
	my $slept = obs(q{SELECT error_exec_time FROM pgss_ng
					 WHERE query = 'SELECT pg_sleep($1)'});
	my ($lo, $hi) = (1000 * ($t_cancel - $t_seen), 1000 * ($t_error - $t_sent));
	note(sprintf('cancel: error_exec_time %.3f ms, bounds %.3f .. %.3f ms',
			$slept, $lo, $hi));
	ok($slept >= $lo && $slept <= $hi,
		'cancel: error_exec_time is the time slept (within the client-side gaps)');
	is(counts('SELECT $1 AS after_cancel'), '2 0',
		'cancel: the next statements counted exactly');
	$s->quit;
}

# ------------------------------------------------------------ deadlock
obs('SELECT pgss_ng_reset()');
{
	my $a = $node->background_psql('postgres', on_error_stop => 0);
	my $b = $node->background_psql('postgres', on_error_stop => 0);
	my $apid = $a->query_safe(q{SET deadlock_timeout = '1h'; SELECT pg_backend_pid()});
	$b->query_safe(q{SET deadlock_timeout = '10ms'});
	$a->query_safe('SELECT pg_advisory_lock(1)');
	$b->query_safe('BEGIN');
	$b->query_safe('SELECT pg_advisory_xact_lock(2)');
	$a->query_until(qr/waiting/, "\\echo waiting\nSELECT pg_advisory_lock(2);\n");
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_locks WHERE pid = $apid AND NOT granted",
			'1'),
		'deadlock: the first session waits for the lock');
	$b->query('SELECT pg_advisory_lock_shared(1)');
	like($b->{stderr}, qr/deadlock detected/, 'deadlock: detected in the second');
	$b->{stderr} = '';
	$b->query_safe('ROLLBACK');
	$b->query_safe('SELECT 1 AS after_deadlock');
	# the first session got its lock when the victim's transaction ended
	$a->query_safe('SELECT pg_advisory_unlock_all()');
	is(counts('SELECT pg_advisory_lock_shared($1)'), '0 1',
		'deadlock: the victim has one error, no call');
	is(obs(q{SELECT error_exec_time >= 10 FROM pgss_ng
			 WHERE query = 'SELECT pg_advisory_lock_shared($1)'}),
		't', 'deadlock: error_exec_time covers deadlock_timeout');
	is(counts('SELECT pg_advisory_lock($1)'), '2 0',
		'deadlock: the survivor waited and succeeded');
	is(counts('SELECT pg_advisory_xact_lock($1)'), '1 0',
		'deadlock: the victim\'s earlier statement counted');
	is(counts('ROLLBACK'), '1 0', 'deadlock: ROLLBACK counted');
	is(counts('SELECT $1 AS after_deadlock'), '1 0',
		'deadlock: the next statement counted exactly');
	$a->quit;
	$b->quit;
}

# ------------------------------------------------------------ disconnect
obs('SELECT pgss_ng_reset()');
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe(
		q{SET client_connection_check_interval = '10ms'; SELECT pg_backend_pid()});
	$s->query_safe('SELECT 2 AS before_gone');
	$s->query_until(qr/sleeping/,
		"\\echo sleeping\nSELECT 1 FROM pg_sleep(600);\n");
	wait_activity($pid, "wait_event = 'PgSleep'",
		'disconnect: target sleeping');
	# the client goes away: its end of the connection is closed
	$s->{run}->kill_kill;
	wait_gone($pid, 'disconnect: the backend noticed and exited');
	is(counts('SELECT $1 FROM pg_sleep($2)'), '0 1',
		'disconnect: the statement counted one error at exit');
	is(counts('SELECT $1 AS before_gone'), '1 0',
		'disconnect: the statement before counted exactly');
}

# ------------------------------------------------------------ terminate
obs('SELECT pgss_ng_reset()');
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/sleeping/,
		"\\echo sleeping\nSELECT 2 FROM pg_sleep(600);\n");
	wait_activity($pid, "wait_event = 'PgSleep'",
		'terminate: target sleeping');
	is(obs("SELECT pg_terminate_backend($pid)"), 't', 'terminate: sent');
	wait_gone($pid, 'terminate: the backend exited');
	is(counts('SELECT $1 FROM pg_sleep($2)'), '0 1',
		'terminate: the statement counted one error at exit');
	$s->{run}->kill_kill;
}

# ------------------------------------------------------- terminate first
# The session's first statement reads a view that sleeps: no constants in
# the statement itself, so parse analysis stores nothing, and nothing
# attaches the backend before the FATAL.
obs('CREATE VIEW sleepy AS SELECT 1 AS one FROM pg_sleep(600)');
obs('SELECT pgss_ng_reset()');
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_until(qr/sleeping/, "\\echo sleeping\nSELECT * FROM sleepy;\n");
	my $pid;
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		ok( $node->poll_query_until(
				'postgres',
				q{SELECT count(*) FROM pg_stat_activity
				   WHERE query LIKE 'SELECT * FROM sleepy%' AND wait_event = 'PgSleep'},
				'1'),
			'terminate first: target sleeping in its first statement');
	}
	$pid = obs(q{SELECT pid FROM pg_stat_activity
				  WHERE query LIKE 'SELECT * FROM sleepy%'});
	is(obs("SELECT pg_terminate_backend($pid)"), 't', 'terminate first: sent');
	wait_gone($pid, 'terminate first: the backend exited');
	is(counts('SELECT * FROM sleepy'), '0 1',
		'terminate first: the first statement counted one error at exit');
	$s->{run}->kill_kill;
}

# ------------------------------------------------------------ past 64 deep
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION f_deep(n int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF n = 0 THEN
    RAISE EXCEPTION 'deep';
  END IF;
  PERFORM 1 FROM f_deep(n - 1);
  RETURN 0;
END$$;});
for my $depth (10, 100)
{
	obs('SELECT pgss_ng_reset()');
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_safe("SET pgss_ng.track = 'all'");
	$s->query("SELECT f_deep($depth)");
	like($s->{stderr}, qr/ERROR:  deep/, "depth $depth: the function failed");
	$s->{stderr} = '';
	# the next statement merges what was noted (and what was not)
	$s->query_safe('SELECT 1 AS after_deep');
	my ($noted, $lost) = $depth + 1 <= 64 ? ($depth + 1, 0) : (64, $depth + 1 - 64);
	is( obs(q{SELECT string_agg(toplevel || ' ' || calls || ' ' || errors, ', '
							   ORDER BY toplevel)
			  FROM pgss_ng WHERE query LIKE '%f\_deep(%'}),
		'false 0 ' . ($noted - 1) . ', true 0 1',
		"depth $depth: the outer $noted failed executions counted in errors");
	is(obs('SELECT dropped FROM pgss_ng_info'), $lost,
		"depth $depth: the $lost deeper ones counted in dropped");
	$s->quit;
}

# ------------------------------------------------------------ incremental
# Two clients change known entries between reads; each read passes the
# start of the previous one (the transaction start, now(), which precedes
# the read).
obs('SELECT pgss_ng_reset()');
{
	my $c1 = $node->background_psql('postgres', on_error_stop => 0);
	my $c2 = $node->background_psql('postgres', on_error_stop => 0);
	$c1->query_safe('SELECT 1 AS inc_one');
	$c2->query_safe('SELECT 1 + 1 AS inc_two');
	my $r0 = obs('SELECT now()');
	my $all = obs(q{SELECT string_agg(query, ',' ORDER BY query COLLATE "C")
					FROM pgss_ng(changed_since => NULL)});
	is($all, 'SELECT $1 + $2 AS inc_two,SELECT $1 AS inc_one',
		'incremental: NULL returns everything');

	$c2->query_safe('SELECT 1 + 1 AS inc_two');
	$c1->query('SELECT 1 / 0 AS inc_fail');
	$c1->{stderr} = '';
	$c1->query_safe('SELECT 3, 4 AS inc_three');
	my $r1 = obs('SELECT now()');
	is( obs(qq{SELECT string_agg(query || ':' || calls || ':' || errors, ','
							   ORDER BY query COLLATE "C")
			   FROM pgss_ng(changed_since => '$r0')}),
		'SELECT $1 + $2 AS inc_two:2:0,SELECT $1 / $2 AS inc_fail:0:1,'
		  . 'SELECT $1, $2 AS inc_three:1:0',
		'incremental: exactly what changed since the previous read');

	$c2->query_safe('SELECT 1 AS inc_one');
	is( obs(qq{SELECT string_agg(query || ':' || calls, ','
							   ORDER BY query COLLATE "C")
			   FROM pgss_ng(changed_since => '$r1')}),
		'SELECT $1 AS inc_one:2',
		'incremental: one entry changed by another client');
	is( obs(q{SELECT count(*) FROM pgss_ng(changed_since => now() + '1 day')}),
		'0', 'incremental: the future returns nothing');
	$c1->quit;
	$c2->quit;
}

$obs->quit;
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP:|PANIC:|pgss_ng could not/,
	'nothing bad in the server log');
done_testing();
