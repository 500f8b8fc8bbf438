# Corner cases of the statistics file (issue 14, items 4 and 5).
#
# 1. Forged texts: a file with a valid CRC-32C in which one record's text
#    holds invalid UTF-8 (\xff\xfe) and another's a NUL byte.  The start
#    restores every other record, skips those two (the log says 2 could
#    not be restored), and the view reads without error afterwards, with
#    exactly the good rows.
# 2. A loaded file that cannot be removed (pg_stat/ made read-only): one
#    WARNING naming the file and the cause, nothing is loaded (a file is
#    loaded only once removed), and a crash restart does not load it
#    either.
# 3. The writer cannot be registered (max_worker_processes = 0): exactly
#    one WARNING naming the cause; the old file is removed then, so the
#    next normal start loads nothing stale.
# 4. A clean shutdown: the writer exits with code 0, and the log has no
#    line about its exit.
#
# Views are read with pgss_ng.track = none, so reading counts nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

use PgssNgTest;

my $node = pgss_node(
	'persist_corners',
	_init => { extra => [ '--encoding=UTF8', '--locale=C' ] },
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on',
	'pgss_ng.max' => 1000,
	autovacuum => 'off',
	restart_after_crash => 'on');

my $statdir = $node->data_dir . '/pg_stat';
my $statfile = "$statdir/pgss_ng.stat";
# never leave pg_stat/ read-only behind (part 2), even when dying
END { chmod 0700, $statdir if defined $statdir && -d $statdir; }
my $exit_re = qr/background worker "pgss_ng writer" \(PID \d+\) exited/;

sub quiet_psql
{
	my ($sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql);
}

# Every "restored" count logged after $pos.
sub restored_counts
{
	my ($pos) = @_;
	return slurp_file($node->logfile, $pos) =~ /pgss_ng restored (\d+) statement entries/g;
}

############################################################################
# 1. Forged texts with a valid CRC.
############################################################################

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
});
# Statements of distinct queryids whose texts hold what is forged below:
# the columns make the queryids, the aliases the texts (exact on every
# version: no constants to normalize).
create_wide_table($node, 'w', 10);
$node->safe_psql(
	'postgres', q{
SELECT c1 AS forge_ff_aa FROM w;
SELECT c2 AS forge_nul_a FROM w;
SELECT c3 AS good_1 FROM w;
SELECT c4 AS good_2 FROM w;
});
my $before = quiet_psql(
	q{SELECT count(*) FROM pgss_ng WHERE query NOT LIKE '%forge%'});

my $pos = -s $node->logfile;
$node->stop('fast');
my $stop_log = slurp_file($node->logfile, $pos);
unlike($stop_log, $exit_re, 'clean stop: no line about the writer\'s exit')
  or diag $stop_log;
ok(-f $statfile, 'clean stop writes the file');

my $good = slurp_file($statfile);
my $body = substr($good, 0, length($good) - 4);
my $nrec_total = quiet_psql_offline_count($body);

# Number of records in a file body (without its CRC).
sub quiet_psql_offline_count
{
	my ($b) = @_;
	my $infolen = unpack('L', substr($b, 12, 4));
	return unpack('L', substr($b, 20 + $infolen, 4));
}

# Same length, so the framing stays valid; only the texts change.
ok($body =~ s/forge_ff_aa/forge_\xff\xfe_aa/, 'forged: invalid UTF-8 in a text');
ok($body =~ s/forge_nul_a/forge_\x00ul_a/, 'forged: a NUL byte in a text');
write_file($statfile, $body . pack('L', crc32c($body)));

$pos = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
my $log = slurp_file($node->logfile, $pos);
my @n = restored_counts($pos);
is(scalar(@n), 1, 'forged: one "restored" message');
is($n[0], $nrec_total - 2, 'forged: every record but the two bad ones restored');
like($log, qr/; 2 more could not be restored/, 'forged: the two bad records counted as skipped');

my ($rc, $out, $err);
($rc, $out, $err) = do
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	my ($o, $e);
	my $r = $node->psql('postgres', 'SELECT query FROM pgss_ng', stdout => \$o, stderr => \$e);
	($r, $o, $e);
};
is($rc, 0, 'forged: the view reads without error') or diag $err;
# (before the fix the view fails: drop everything so that the rest runs)
quiet_psql('SELECT pgss_ng_reset()') if $rc != 0;
is( quiet_psql(q{SELECT count(*) FROM pgss_ng WHERE query LIKE '%forge%'}),
	'0', 'forged: the two bad records are not in the view');
is(quiet_psql(q{SELECT count(*) FROM pgss_ng WHERE query IN
	('SELECT c3 AS good_1 FROM w', 'SELECT c4 AS good_2 FROM w')}),
	'2', 'forged: the good records are');

############################################################################
# 2. A loaded file that cannot be removed.
############################################################################

$node->stop('fast');
ok(-f $statfile, 'unremovable: the file is written');
chmod 0500, $statdir or die "chmod: $!";
$pos = -s $node->logfile;
$node->start;
my $rm_re = qr/WARNING:  pgss_ng did not load statistics file "pg_stat\/pgss_ng\.stat": could not remove it: Permission denied/;
$node->wait_for_log(qr/$rm_re|pgss_ng restored/, $pos);
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'unremovable: nothing loaded');

# Crash restart: the file is still there and must not be loaded now either.
my $pos2 = -s $node->logfile;
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	my $victim = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'SELECT pg_sleep(60)' ],
		'<', \undef, '>', \my $o, '2>', \my $e);
	$node->poll_query_until('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'}, '1');
	my $vpid = quiet_psql(
		q{SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'});
	kill 'KILL', $vpid;
	$victim->finish;
}
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $pos2);
# the writer of the new cycle has looked at the file once a second
# WARNING or "restored" line is there
for (my $i = 0; $i < 1800; $i++)
{
	my $n = () = slurp_file($node->logfile, $pos) =~ /$rm_re|pgss_ng restored/g;
	last if $n >= 2;
	usleep(100_000);
}
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	$node->poll_query_until('postgres', 'SELECT 1', '1');
}
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'unremovable: nothing loaded after a crash restart');
$log = slurp_file($node->logfile, $pos);
is(scalar(() = $log =~ /pgss_ng restored/g), 0, 'unremovable: never loaded');
is(scalar(() = $log =~ /$rm_re/g), 2, 'unremovable: one WARNING at each start');
chmod 0700, $statdir or die "chmod: $!";

############################################################################
# 3. The writer cannot be registered.
############################################################################

$node->safe_psql('postgres', 'SELECT c5 AS stale_marker FROM w');
$node->stop('fast');
ok(-f $statfile, 'no writer: a file from the previous run');
$node->append_conf('postgresql.conf', "max_worker_processes = 0\n");
$pos = -s $node->logfile;
$node->start;
$node->safe_psql('postgres', 'SELECT c6 AS during_no_writer FROM w');
$node->stop('fast');
$log = slurp_file($node->logfile, $pos);
my @w = $log =~ /WARNING:  (pgss_ng[^\n]*max_worker_processes[^\n]*)/g;
is(scalar(@w), 1, 'no writer: exactly one WARNING naming max_worker_processes') or diag $log;

ok(!-e $statfile, 'no writer: the stale file was removed at that start');

$node->adjust_conf('postgresql.conf', 'max_worker_processes', '8');
$pos = -s $node->logfile;
$node->start;
if (-e $statfile)
{
	# (before the fix) the stale file is there: wait until it is read
	$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
}
is(quiet_psql(q{SELECT count(*) FROM pgss_ng WHERE query LIKE '%stale_marker%'}),
	'0', 'no writer: the stale file is not loaded at the next start');
my @r = restored_counts($pos);
is(scalar(@r), 0, 'no writer: no "restored" message');

$pos = -s $node->logfile;
$node->stop('fast');
unlike(slurp_file($node->logfile, $pos), $exit_re, 'last clean stop: no line about the writer\'s exit');

done_testing();
