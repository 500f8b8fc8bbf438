# The writer's give-up path (writer.c): at a clean shutdown the pgss_ng
# writer waits up to 30 s (PGSS_NG_WRITER_WAIT_MS) for every other process
# to flush and detach, then saves the statistics anyway, saying so.
#
# Backend B (track = all) runs S twice (flushed), then a function whose
# nested statement N is counted (pending in B) before it waits on an
# advisory lock, held by a prepared transaction: a shutdown does not
# release it, so B cannot get it and end its statement (flushing N) while
# the shutdown's signals go out (a lock held by a session could be freed
# by that session's exit first).  gdb, attached to B with a breakpoint on
# die() (the SIGTERM handler of a backend), stops B when a fast shutdown
# signals it: B can neither flush nor detach.  Asserted:
# - the writer logs "pgss_ng writer saves statistics while 1 processes
#   are still attached", at least 29.5 s after the postmaster logged the
#   shutdown request (log timestamps; the wait counts 3000 waits of
#   10 ms), and writes the stats file, while B is still stopped;
# - B let go, the shutdown completes;
# - the next start restores the file the writer wrote then: S with its 2
#   calls, and N without the call B still held (B flushed it at its
#   exit, after the file was written).
# Needs gdb and permission to ptrace a backend: otherwise the whole file
# is skipped, saying why.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use Time::Local qw(timegm);

use PgssNgTest;

my $node = pgss_node(
	'writer_gives_up',
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'on',
	'max_prepared_transactions' => 2);
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE t (x int);
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM count(*) FROM t WHERE x > 7;
  PERFORM pg_advisory_lock(1);
END$$;
});

my $sess_b = $node->background_psql('postgres', on_error_stop => 0);
my $bpid = $sess_b->query_safe('SELECT pg_backend_pid()');
$sess_b->set_query_timer_restart;
gdb_usable_or_skip($bpid, 'die');

untracked_psql($node,
	"BEGIN; SELECT pg_advisory_xact_lock(1); PREPARE TRANSACTION 'hold_lock'");

$sess_b->query_safe("SET pgss_ng.track = 'all'");
$sess_b->query_safe('SELECT count(*) FROM t') for 1 .. 2;
my $bm = send_async($sess_b, 'SELECT f();');
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $bpid"),
		'B waits on the advisory lock, its nested count pending');
}

# log line time (s since the epoch) of the first line matching $re
sub log_time
{
	my ($re) = @_;
	for my $l (split /\n/, slurp_file($node->logfile))
	{
		next unless $l =~ $re;
		my ($y, $mo, $d, $h, $mi, $s) =
		  $l =~ /^(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+\.\d+) UTC/ or next;
		return timegm(0, $mi, $h, $d, $mo - 1, $y) + $s;
	}
	return undef;
}

my $g = gdb_attach('shutdown', $bpid, 'die');
my ($stop_out, $stop_err) = ('', '');
my $stop = IPC::Run::start(
	[
		'pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-w',
		'-t', 2 * $PostgreSQL::Test::Utils::timeout_default, 'stop'
	],
	'<', \undef, '>', \$stop_out, '2>', \$stop_err);
SCENARIO:
{
	last SCENARIO unless defined $g;
	last SCENARIO
	  unless ok(stopped_in($g, 'die'),
		'the shutdown\'s SIGTERM stops B in die()');
	my $given_up =
	  qr/LOG:  pgss_ng writer saves statistics while 1 processes are still attached$/;
	ok( defined eval {
			$node->wait_for_log($given_up);
		},
		'the writer gives up waiting for B, and says so');
	my $t_req = log_time(qr/received fast shutdown request/);
	my $t_up = log_time($given_up);
	note(sprintf('shutdown request to the writer\'s line: %.3f s',
			($t_up // 0) - ($t_req // 0)));
	cmp_ok(($t_up // 0) - ($t_req // 0), '>=', 29.5,
		'it waited 30 s (log timestamps) before giving up');
	my $file = $node->data_dir . '/pg_stat/pgss_ng.stat';
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(20_000) while !-e $file && time() < $deadline;
	ok(-e $file, 'the writer wrote the stats file while B is still stopped');
}
gdb_release($g);
$stop->finish;
is($stop->result(0), 0, 'the fast shutdown completed once B was let go')
  or diag("$stop_out\n$stop_err");
$sess_b->{run}->kill_kill;
$node->_update_pid(0);

$node->start;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/);
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	is( $node->safe_psql(
			'postgres', q{
			SELECT string_agg(query || ' ' || calls, ', ' ORDER BY query)
			FROM pgss_ng WHERE query LIKE 'SELECT count(*) FROM t%'}),
		'SELECT count(*) FROM t 2',
		'restored: S with its 2 calls, not the count B held past the save');
}
untracked_psql($node, "ROLLBACK PREPARED 'hold_lock'");
$node->stop;
done_testing();
