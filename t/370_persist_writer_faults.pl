# 370_persist_writer_faults.pl
#
# The writer keeps publishing pgss_ng.max, and shutdowns do not hang,
# under faults outside pgss_ng's control:
#
# 1. A FIFO at pg_stat/pgss_ng.stat at start (nobody at its other end:
#    an open() for reading would wait forever): the writer refuses it
#    without blocking, with one WARNING that names it and says it is not
#    a regular file, and removes it; a reload of pgss_ng.max is
#    published; a fast shutdown writes the stats file, and the entry made
#    before it is back after the restart.
# 2. A FIFO at the temporary name pg_stat/pgss_ng.stat.tmp at a fast
#    shutdown (an open() for writing would wait forever): the shutdown
#    writes the stats file all the same, and the entry is back again.
# 3. A stray SIGTERM to the writer while a session is connected and
#    attached: the writer exits at once with code 1, without waiting for
#    the session nor saving (no "saves statistics while ... still
#    attached" line, which the 30 s wait for backends ends with); the
#    postmaster starts a new writer, which publishes a reload of
#    pgss_ng.max while the session is still connected.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(mkfifo);

use PgssNgTest;

my $node = pgss_node('writer_faults', 'pgss_ng.save' => 'on', _start => 0);
my $stat = $node->data_dir . '/pg_stat/pgss_ng.stat';

sub entries_max
{
	return untracked_psql($node, 'SELECT entries_max FROM pgss_ng_info');
}

sub reload_max
{
	my ($max) = @_;
	untracked_psql($node,
		"ALTER SYSTEM SET pgss_ng.max = $max; SELECT pg_reload_conf()");
	return $node->poll_query_until('postgres',
		'SELECT entries_max FROM pgss_ng_info', $max);
}

# The writer's pid: the postmaster's child whose title names it (a
# background worker without a database is not in pg_stat_activity);
# undef if there is none.
sub writer_pid
{
	my $pm = $node->{_pid};
	for my $dir (glob('/proc/[0-9]*'))
	{
		open(my $st, '<', "$dir/status") or next;
		my ($ppid) = join('', <$st>) =~ /^PPid:\s+(\d+)/m;
		close($st);
		next unless defined $ppid && $ppid == $pm;
		open(my $cl, '<', "$dir/cmdline") or next;
		my $cmd = join('', <$cl>);
		close($cl);
		return $dir =~ s{^/proc/}{}r if $cmd =~ /pgss_ng writer/;
	}
	return undef;
}

sub restored
{
	my ($tag) = @_;
	return untracked_psql($node,
		"SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE query LIKE '%$tag%'");
}

# -- 1. a FIFO at the stats file's name ----------------------------------------

ok(mkfifo($stat, 0600), 'a FIFO at pg_stat/pgss_ng.stat') or diag("mkfifo: $!");
$node->start;
ok( $node->wait_for_log(
		qr/WARNING:  pgss_ng ignored statistics file "pg_stat\/pgss_ng\.stat": it is not a regular file/
	),
	'start: the writer refuses the FIFO with a WARNING naming it');
untracked_psql($node, 'CREATE EXTENSION pgss_ng');
ok(reload_max(150), 'a reload of pgss_ng.max is published');
ok(!-e $stat, 'the FIFO was removed');
$node->safe_psql('postgres', 'SELECT 1 AS made_before_stop');
$node->stop('fast');
ok(-f $stat, 'the fast shutdown wrote the stats file');
my @warnings = slurp_file($node->logfile) =~ /not a regular file/g;
is(scalar @warnings, 1, 'one WARNING');
$node->start;
is(restored('made\_before\_stop'), '1', 'the entry is back after the restart');

# -- 2. a FIFO at the temporary name ---------------------------------------------

ok(mkfifo("$stat.tmp", 0600), 'a FIFO at pg_stat/pgss_ng.stat.tmp')
  or diag("mkfifo: $!");
$node->stop('fast');
ok(-f $stat && !-e "$stat.tmp",
	'the fast shutdown wrote the stats file, and nothing is left at the '
	  . 'temporary name');
$node->start;
is(restored('made\_before\_stop'), '1', 'the entry is back again');

# -- 3. a stray SIGTERM ------------------------------------------------------------

my $session = $node->background_psql('postgres');
$session->query_safe('SELECT 1 AS attached');
my $writer = writer_pid() // 0;
ok($writer, 'the writer runs');
my $pos = -s $node->logfile;
ok(kill('TERM', $writer), 'SIGTERM to the writer');
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
my $new_writer;
while (time() < $deadline)
{
	$new_writer = writer_pid();
	last if defined $new_writer && $new_writer != $writer;
	sleep(1);
}
ok(defined $new_writer && $new_writer != $writer,
	'the postmaster started a new writer');
ok(reload_max(200), 'it publishes a reload of pgss_ng.max');
is($session->query_safe('SELECT 2 AS still_connected'), '2',
	'the session is still connected');
my $log = slurp_file($node->logfile, $pos);
like($log,
	qr/background worker "pgss_ng writer" \(PID $writer\) exited with exit code 1/,
	'the old writer exited with code 1');
unlike($log, qr/saves statistics while/,
	'it did not wait for the session, nor save');
$session->quit;
$node->stop;
done_testing();
