# The deferred flush, and the wait events of the kind layer's own locks
# (pgss_ng_entry, pgss_ng_hash, pgss_ng_dsa: README "Wait events"), each
# forced by stopping backend A with gdb while it holds the lock; the
# observer, untracked, polls pg_stat_activity.  (t/550 does the named
# LWLocks pgss_ng_qtext, pgss_ng_dealloc and pgss_ng_alloc.)
#
# - Entry lock busy, deferred flush: A and B both ran S once.  A runs S
#   again and is stopped in pgss_ng_kind_unlock_entry, called with S's
#   entry lock held by the count of its top-level call straight into the
#   entry (pgss_ng_kind_unlock_key; a pending entry's flush,
#   stmt_flush_pending, holds it there too).  B runs S: its
#   flush tries the lock without waiting and keeps the count pending, so
#   B answers while A still holds the lock (B waiting instead, seen more
#   than 1 s after it was sent S, proves nothing: on a stalled machine its
#   count may have grown that old; then A and B are let go and this is
#   tried again, at most 3 times).  Once B's pending count is
#   more than 1 s old (the test waits for that), B's next statement T
#   flushes with a waiting lock: B waits on LWLock pgss_ng_entry.  A is
#   let go: B finishes T, and S counts 4 calls (A 2, B 2), T 1: no count
#   lost.
# - The same with a forced flush: A stopped again the same way, B runs S
#   (deferred: answers), then reads the view, which flushes B's counts
#   with a waiting lock first: B waits on LWLock pgss_ng_entry; once A is
#   let go, B's own read shows S with 6 calls (a session sees its own
#   finished statements).
# - pgss_ng_hash: A, making the entry of a new statement, is stopped in
#   the dshash_release_lock that publishes it (the second one after
#   create_body began: the first releases the text's partition in the
#   text hash), so it holds that partition lock of the entries' hash
#   exclusively; B (untracked) reads the view, whose scan takes each
#   partition lock shared: B waits on LWLock pgss_ng_hash.
# - pgss_ng_dsa: A, making the entry of a new statement, is stopped in the
#   first LWLockRelease inside the dsa_allocate_extended of its entry
#   body (the area's lock for the body's size class is still held); B
#   makes the entry of another new statement, whose body needs the same
#   lock: B waits on LWLock pgss_ng_dsa.
# After each, A and B finish without error.  Needs gdb and permission to
# ptrace a backend: otherwise the whole file is skipped, saying why.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use PgssNgTest;

# the defaults: max 5000, track top, no planning
my $node = pgss_node('entry_hash_dsa', 'pgss_ng.save' => 'off');
$node->safe_psql('postgres',
	'CREATE EXTENSION pgss_ng; CREATE TABLE t1 (x int); '
	  . 'CREATE TABLE t2 (x int); CREATE TABLE t3 (x int)');

my $sess_a = $node->background_psql('postgres');
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
my $sess_b = $node->background_psql('postgres');
my $bpid = $sess_b->query_safe('SELECT pg_backend_pid()');
my $obs = $node->background_psql('postgres');
$obs->query_safe('SET pgss_ng.track = none');
$_->set_query_timer_restart for ($sess_a, $sess_b, $obs);

gdb_usable_or_skip($apid,
	qw(pgss_ng_kind_unlock_entry stmt_flush_pending create_body
	  dshash_release_lock dsa_allocate_extended LWLockRelease));

my $s_sql = 'SELECT count(*) FROM t1';

sub calls_of
{
	my ($q) = @_;
	return $obs->query_safe(
		"SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE query = '$q'");
}

# Let A go ($g: its gdb, or undef); A and B finished what they were sent
# ($am, $bm: markers of send_async, or undef) with the expected output,
# and nothing went to stderr.
sub both_finish
{
	my ($g, $name, $am, $want_a, $bm, $want_b) = @_;
	gdb_release($g);
	is(wait_async($sess_a, $am), $want_a, "$name: A finished") if defined $am;
	is(wait_async($sess_b, $bm), $want_b, "$name: B finished") if defined $bm;
	is($sess_a->{stderr} . $sess_b->{stderr}, '', "$name: no error in A or B");
	return;
}

# Send $sql to B: B must wait on LWLock $lock (test $what).  Returns the
# marker.
sub b_waits_on
{
	my ($lock, $sql, $what) = @_;
	my $bm = send_async($sess_b, $sql);
	is(wait_for_lwlock($obs, $bpid, $lock), "LWLock:$lock", $what);
	return $bm;
}

# Stop A in pgss_ng_kind_unlock_entry of its flush of S (S's entry lock
# held), then let B run S: its flush must be deferred (B answers).
# Returns the gdb handle (undef if any of it failed) and A's mark.
# B's count of S is no older than the time since B was sent S: B waiting
# for the lock sooner than 1 s after that is a flush that was not
# deferred.  Waiting later, B may have found its count over
# PGSS_NG_PENDING_MAX_AGE_MS old (a machine that stalled it), which says
# nothing: A and B are let go and it is tried again, at most 3 times
# (each try adds a call of S by A and one by B to $s_retried).
my $s_retried = 0;

sub a_holds_entry_lock_b_defers
{
	my ($name) = @_;
	for my $try (1 .. 3)
	{
		my ($g, $am) = gdb_stop_at($name, $apid, 'pgss_ng_kind_unlock_entry',
			'pgss_ng_kind_unlock_entry', $sess_a, "$s_sql;");
		return (undef, $am) unless defined $g;
		like(gdb_bt($g), qr/#1 .*(stmt_flush_pending|pgss_ng_kind_unlock_key)/,
			"$name: A stopped holding S's entry lock, counting into it");
		my $t_sent = time();
		my $bm = send_async($sess_b, "$s_sql;");
		my $r = answered_or_lwlock($obs, $sess_b, $bm, $bpid, 'pgss_ng_entry')
		  // 'timed out';
		my $after = time() - $t_sent;
		if ($r eq 'waits' && $after >= 1 && $try < 3)
		{
			note(sprintf('%s: B waited, seen %.3f s after it was sent S: '
				  . 'its count may have been over 1 s old; again', $name, $after));
			gdb_release($g);
			wait_async($sess_a, $am);
			wait_async($sess_b, $bm);
			$s_retried += 2;
			next;
		}
		return ($g, $am)
		  if is($r, 'answered',
			"$name: B answered while A holds the entry lock (its flush deferred)");
		# B waits (or hangs): let A go so that B can finish
		gdb_release($g);
		wait_async($sess_b, $bm);
		return (undef, $am);
	}
}

# ------------------------------------------------ deferred flush, waited
$sess_a->query_safe($s_sql);
$sess_b->query_safe($s_sql);
is(calls_of($s_sql), 2, 'S: one call of A and one of B');
{
	my ($g, $am, $bm);
  SCENARIO:
	{
		($g, $am) = a_holds_entry_lock_b_defers('deferred');
		my $answered = time();
		last SCENARIO unless defined $g;

		# B's count of S is pending since before it answered: once that is
		# over 1 s ago, its next flush waits for the lock.
		usleep(10_000) while time() < $answered + 1.05;
		$bm = b_waits_on('pgss_ng_entry', 'SELECT count(*) FROM t2;',
			'deferred: past 1 s, B\'s next flush waits on LWLock pgss_ng_entry');
	}
	both_finish($g, 'deferred', $am, '0', $bm, '0');
	is(calls_of($s_sql), 4 + $s_retried,
		'deferred: S counts 4 calls (and 2 per try again), none lost');
	is(calls_of('SELECT count(*) FROM t2'), 1, 'deferred: T counted once');
}

# ------------------------------------------------ deferred flush, forced
{
	my ($g, $am, $bm);
  SCENARIO:
	{
		($g, $am) = a_holds_entry_lock_b_defers('forced');
		last SCENARIO unless defined $g;

		$bm = b_waits_on('pgss_ng_entry',
			"SELECT calls FROM pgss_ng WHERE query = '$s_sql';",
			'forced: B\'s view read flushes first, waiting on LWLock pgss_ng_entry');
	}
	both_finish($g, 'forced', $am, '0', $bm, 6 + $s_retried);
	is(calls_of($s_sql), 6 + $s_retried,
		'forced: S counts 6 calls (and 2 per try again), none lost');
}

# ------------------------------------------------ pgss_ng_hash
{
	$sess_b->query_safe('SET pgss_ng.track = none');
	my ($g, $am, $bm);
  SCENARIO:
	{
		($g, $am) = gdb_stop_at('hash', $apid, 'create_body', 'create_body',
			$sess_a, 'SELECT x, x FROM t3;');
		last SCENARIO unless defined $g;
		stop_next($g, 'hash', 'dshash_release_lock', 'dshash_release_lock',
			qr/#1 .*pgss_ng_qtext_store/,
			'the first releases the text\'s partition')
		  or last SCENARIO;
		stop_next($g, 'hash', 'dshash_release_lock', 'dshash_release_lock',
			qr/#1 .*(?:create_body|lookup_or_create)/,
			'the second publishes the entry (called by create_body)')
		  or last SCENARIO;

		$bm = b_waits_on('pgss_ng_hash', 'SELECT count(*) > 0 FROM pgss_ng;',
			'hash: B\'s view read waits on LWLock pgss_ng_hash');
	}
	both_finish($g, 'hash', $am, '', $bm, 't');
	is(calls_of('SELECT x, x FROM t3'), 1, 'hash: A\'s statement recorded');
	$sess_b->query_safe('SET pgss_ng.track = top');
}

# ------------------------------------------------ pgss_ng_dsa
{
	my ($g, $am, $bm);
  SCENARIO:
	{
		# at the first instruction: nothing of the call has run yet
		($g, $am) = gdb_stop_at('dsa', $apid, '*dsa_allocate_extended',
			'dsa_allocate_extended', $sess_a, 'SELECT x, x, x FROM t3;');
		last SCENARIO unless defined $g;
		like(gdb_bt($g), qr/create_body|lookup_or_create|alloc_body/,
			'dsa: allocating the body of a new entry');
		stop_next($g, 'dsa', 'LWLockRelease', 'LWLockRelease',
			qr/#[12] .*dsa_allocate_extended/,
			'releasing a lock of the area, inside dsa_allocate_extended')
		  or last SCENARIO;

		$bm = b_waits_on('pgss_ng_dsa', 'SELECT x, x, x, x FROM t3;',
			'dsa: B\'s new entry waits on LWLock pgss_ng_dsa');
	}
	both_finish($g, 'dsa', $am, '', $bm, '');
	is( $obs->query_safe(
			q{SELECT string_agg(calls::text, ' ' ORDER BY query)
			  FROM pgss_ng WHERE query IN ('SELECT x, x, x FROM t3',
										   'SELECT x, x, x, x FROM t3')}),
		'1 1',
		'dsa: both new statements recorded once');
}

$_->quit for ($sess_a, $sess_b, $obs);
is( $node->safe_psql(
		'postgres', 'SELECT entries = entries_allocated FROM pgss_ng_info'),
	't', 'no body left over');
$node->stop;
my @errors = grep { /\b(ERROR|FATAL|PANIC|TRAP):|terminated by signal/ }
  split /\n/, slurp_file($node->logfile);
is_deeply(\@errors, [], 'no ERROR, FATAL or crash in the server log');

done_testing();
