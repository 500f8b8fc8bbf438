# Shared memory running out must not flood the log (issue 14, item 3).
#
# Dynamic shared memory segments are files here (dynamic_shared_memory_type
# = mmap), and the server runs under a file size limit of 1536 kB
# (ulimit -f 3072 in sh's 512-byte blocks, through a pg_ctl wrapper;
# PostgreSQL ignores SIGXFSZ, so a write past it fails with EFBIG): the
# kind's DSA area can add its two 1 MB segments, and every larger one
# fails ("could not resize shared memory segment ... File too large").
# WAL segments are 1 MB (initdb --wal-segsize=1) so that nothing else
# reaches the limit.
#
# 1. A file of the 20000 saved entries and a few more (CREATE EXTENSION,
#    the table's creation), written by a run without the limit, is
#    restored under it: the restore stops at the first out-of-memory, with
#    one line saying how many entries were skipped; at most one "pgss_ng
#    could not" line is logged.
# 2. A new start without a file: 20000 new distinct statements, most of
#    which cannot get an entry: every statement succeeds, entries + dropped
#    = 20000 with dropped > 0, at least one "pgss_ng could not" line is
#    logged, and they are at most one per 10 s of the run (plus one) —
#    before the fix there was one per statement.  Then, every 0.1 s, a
#    new connection runs a new statement, until a "could not record a
#    statement" line logged by one of them is followed by another: the
#    second of the run's lines gives in its DETAIL the count of those
#    suppressed since the first, at least one (the statements of the run
#    kept trying while the allocation back-off allowed, 0.1 s after the
#    first failure, then 0.2 s, ...) and, with the two lines' own, at
#    most the executions dropped; and the line after a connection's line
#    is logged at least 10 s after that connection was opened.  The rate
#    limit reads its clock, which starts the 10 s, while the connection
#    runs, a moment before the line is written; so the bound holds
#    however long that moment lasts, and a missing or shorter limit gives
#    the back-off's 0.1 s steps instead.
#
# The 20000 distinct statements select distinct pairs of columns of a wide
# table: no constants, so they stay distinct on every version (SET values,
# for one, are normalized to $1 from 18 on).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use Time::Local qw(timegm);
use POSIX qw(ceil);

use PgssNgTest;

my $node = pgss_node(
	'log_flood',
	_init => { extra => [ '--wal-segsize=1' ] },
	'pgss_ng.max' => 50000,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on',
	dynamic_shared_memory_type => 'mmap',
	max_parallel_workers_per_gather => 0,
	autovacuum => 'off',
	log_statement => 'none',
	min_wal_size => '4MB',
	max_wal_size => '8MB',
	_start => 0);

# pg_ctl wrapper that starts the server under the file size limit.
my $wrapdir = PostgreSQL::Test::Utils::tempdir();
my $real_pg_ctl = `sh -c 'command -v pg_ctl'`;
chomp $real_pg_ctl;
open my $fh, '>', "$wrapdir/pg_ctl" or die $!;
print $fh "#!/bin/sh\nulimit -f 3072\nexec '$real_pg_ctl' \"\$@\"\n";
close $fh;
chmod 0755, "$wrapdir/pg_ctl";

sub start_limited
{
	local $ENV{PATH} = "$wrapdir:$ENV{PATH}";
	$node->start;
	return;
}

sub quiet_psql
{
	my ($sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql);
}

# 20000 distinct statements: ordered pairs of the 150 columns of w
sub pair_statements
{
	my @s;
	for my $i (1 .. 150)
	{
		for my $j (grep { $_ != $i } 1 .. 150)
		{
			push @s, "SELECT c$i, c$j FROM w;\n";
			return join('', @s) if @s == 20000;
		}
	}
	die 'not enough pairs';
}

# Run 1, no limit: 20000 entries, saved at a clean stop.
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 150);
my $sql = pair_statements();
$node->safe_psql('postgres', $sql);
my $nsaved = quiet_psql('SELECT entries FROM pgss_ng_info');
cmp_ok($nsaved, '>=', 20000, "$nsaved entries before the stop");
$node->stop('fast');
my $file = slurp_file($node->data_dir . '/pg_stat/pgss_ng.stat');
# header: magic, version, major, info block size, record size; info block
my $infolen = unpack('L', substr($file, 12, 4));
is(unpack('L', substr($file, 20 + $infolen, 4)), $nsaved, "the file holds $nsaved records");

# The log file is under the limit too: each limited run gets a new one,
# and a log that reached the limit (before the fix) ends the wait.
sub wait_restored_or_full
{
	for (my $i = 0; $i < 1800; $i++)
	{
		return if slurp_file($node->logfile) =~ /pgss_ng restored \d+ statement entries/;
		return if -s $node->logfile >= 1536 * 1024 - 512;
		usleep(100_000);
	}
	return;
}

# Run 2, limited: the restore runs out of shared memory.
$node->rotate_logfile;
start_limited();
wait_restored_or_full();
my $log = slurp_file($node->logfile);
my @could = $log =~ /(pgss_ng could not [^\n]*)/g;
note('restore: ' . scalar(@could) . ' "could not" lines; first: ' . ($could[0] // ''));
cmp_ok(scalar(@could), '<=', 1, 'restore: at most one "pgss_ng could not" line');
my @restored = $log =~ /(pgss_ng restored \d+ statement entries[^\n]*)/g;
is(scalar(@restored), 1, 'restore: one "restored" line');
like($restored[0] // '', qr/restored (\d+) statement entries .*; (\d+) more could not be restored/,
	'restore: it says how many entries were skipped');
my ($nres, $nskip) = ($restored[0] // '') =~ /restored (\d+) .*; (\d+) more/;
is(($nres // 0) + ($nskip // 0), $nsaved, 'restore: restored + skipped = the records saved');
cmp_ok($nres // 0, '<', $nsaved, 'restore: shared memory did run out');

# Run 3, limited, no saved file: 20000 new statements, the later ones of
# which cannot get an entry.
$node->stop('immediate');
unlink $node->data_dir . '/pg_stat/pgss_ng.stat';
$node->rotate_logfile;
start_limited();
my $pos = 0;
my $t0 = time();
$sql = pair_statements();
my ($rc, $out, $err) = (0, '', '');
$rc = $node->psql('postgres', $sql, stdout => \$out, stderr => \$err);
my $elapsed = time() - $t0;
is($rc, 0, 'the 20000 statements all succeed') or diag $err;
$log = slurp_file($node->logfile, $pos);
@could = $log =~ /(pgss_ng could not [^\n]*)/g;
my $bound = 1 + ceil($elapsed / 10);
note(sprintf('%d "could not" lines in %.1f s (bound %d); first: %s',
		scalar(@could), $elapsed, $bound, $could[0] // ''));
cmp_ok(scalar(@could), '>=', 1, 'shared memory ran out: a "could not" line');
cmp_ok(scalar(@could), '<=', $bound, 'at most one "could not" line per 10 s');
my ($entries, $dropped) = split /\|/,
  quiet_psql('SELECT entries, dropped FROM pgss_ng_info');
cmp_ok($dropped, '>', 0, "statements were dropped ($dropped)");
is($entries + $dropped, 20000,
	'every statement not recorded is counted in dropped');

# The "record a statement" lines of the log: [time (s), suppressed count
# from its DETAIL or 0, pid].
sub record_lines
{
	my @r;
	for my $l (split /\n/, slurp_file($node->logfile))
	{
		my ($y, $mo, $d, $h, $mi, $sec, $pid, $what) = $l =~
		  /^(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+\.\d+) UTC \[(\d+)\] .*?(?:LOG|DETAIL):  (.*)$/
		  or next;
		if ($what =~ /^pgss_ng could not record a statement: /)
		{
			push @r,
			  [ timegm(0, $mi, $h, $d, $mo - 1, $y) + $sec, 0, $pid ];
		}
		elsif (@r && $what =~
			/^(\d+) more such messages were suppressed since the last one\.$/)
		{
			$r[-1][1] = $1;
		}
	}
	return @r;
}

# The first line logged by one of the connections below and the line
# after it: (index of the first in @rec, or undef).
my %opened;    # pid of a connection => when it was opened (time())
sub paired_line
{
	my @rec = @_;
	for my $k (0 .. $#rec - 1)
	{
		return $k if exists $opened{ $rec[$k][2] };
	}
	return undef;
}

# Every 0.1 s a new connection runs a new statement (not seen before: it
# tries to make an entry), until a line one of them logged has a
# successor.
{
	my $n = 0;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (!defined paired_line(record_lines()) && time() < $deadline)
	{
		$n++;
		my ($i, $j) = (3 + int($n / 147), 3 + $n % 147);
		my $t = time();
		my $pid = $node->safe_psql('postgres',
			"SELECT pg_backend_pid(); SELECT c1, c2, c$i, c$j FROM w");
		$opened{$pid} //= $t;
		usleep(100_000);
	}
	note("$n connections until a line of one of them had a successor");
}
my @rec = record_lines();
$dropped = quiet_psql('SELECT dropped FROM pgss_ng_info');
note(sprintf('"record a statement" lines: %s; dropped %d',
		join(', ', map { sprintf('%.3f s +%d', $_->[0] - $rec[0][0], $_->[1]) } @rec),
		$dropped));
cmp_ok(scalar(@rec), '>=', 2, 'a second "could not record a statement" line');
cmp_ok($rec[1][1] // 0, '>=', 1,
	'it says how many were suppressed since the first');
cmp_ok(($rec[1][1] // 0) + 2, '<=', $dropped,
	'those suppressed and the two lines\' are at most the executions dropped');
my $k = paired_line(@rec);
ok(defined $k, 'a line logged by a new connection, and one after it');
if (defined $k)
{
	my $gap = $rec[ $k + 1 ][0] - $opened{ $rec[$k][2] };
	note(sprintf('the next line came %.3f s after the connection of line %d '
		  . 'was opened', $gap, $k + 1));
	# log times are in whole ms, rounded down
	cmp_ok($gap, '>=', 10 - 0.001,
		'the next line came at least 10 s after the connection was opened');
}

$node->stop('fast');
done_testing();
