# An entry's value for eviction (its usage) halves every 60 s, also across
# seconds, and a restart keeps it: measured through the stats file, which
# saves each entry's usage decayed to the moment it is written, and the
# restore, which gives a restored entry that usage and lets it decay from
# the moment it is restored (README "Memory and eviction", design.md
# "Eviction and the backstop").  No test clock, no minute of waiting:
#
# - A statement run 40 times; a clean stop writes the file: its usage U0,
#   at most 40 and at least 40 decayed over the time since the first run.
# - Start (the writer restores U0 at some moment in [a, b]: a before the
#   start, b once the "restored" line is in the log), wait 6 s more, a
#   clean stop (the writer saves at some moment in [c, d]: c before the
#   stop, d after): its usage U1.  Nothing touches the entry in between.
# - So U1 = U0 * 2^(-t / 60 s) for some t in [c - b, d - a]: U1 must lie
#   in [U0 * 2^(-(d - a) / 60), U0 * 2^(-(c - b) / 60)].  With c - b >= 6 s
#   the upper end is at most 0.933 U0, so a usage that does not decay, or
#   decays from the save rather than the restore, or a half-life of 2 x
#   (0.966) or half (0.871 and below) fails, and how slow the machine is
#   only widens the interval (the bound never depends on it).
#
# The record is found by its text (what follows the record's fixed part,
# whose size the file's header gives, and its histograms' counts; its rows
# of wait events and plan rows come after it); usage is the last field of
# PgssNgStmtRecord, the 8 bytes before those counts.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use PgssNgTest;

my $node = pgss_node(
	'usage_half_life',
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'on',
	autovacuum => 'off');
my $statfile = $node->data_dir . '/pg_stat/pgss_ng.stat';
my $text = 'SELECT count(*) FROM t WHERE x < $1';

# The saved usage of the record whose text is $text.
sub saved_usage
{
	my $f = slurp_file($statfile);
	# header: magic, version, major, info block size, record size
	my ($infolen, $recsize) = unpack('L2', substr($f, 12, 8));
	my $p = 20 + $infolen;
	my $nrec = unpack('L', substr($f, $p, 4));
	$p += 4;
	my @found;
	for (1 .. $nrec)
	{
		my $len = unpack('L', substr($f, $p, 4));
		my $rec = substr($f, $p + 4, $len);
		$p += 4 + $len;
		next unless $len >= $recsize;
		# the histograms' window lengths: after the key (24), counters (424),
		# have_minmax (2), hist_lost (2) and hist_lo (4)
		my ($h0, $h1) = unpack('S2', substr($rec, 24 + 424 + 2 + 2 + 4, 4));
		my $at = $recsize + 4 * ($h0 + $h1);
		next unless $len >= $at + length($text)
		  && substr($rec, $at, length($text)) eq $text;
		push @found, unpack('d', substr($rec, $recsize - 8, 8));
	}
	is(scalar(@found), 1, 'the statement has one record in the file');
	return $found[0];
}

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng; CREATE TABLE t (x int)');
my $t0 = time();
$node->safe_psql('postgres',
	join('', map { "SELECT count(*) FROM t WHERE x < $_;\n" } 1 .. 40));
$node->stop('fast');
my $u0 = saved_usage();
my $u0_lo = 40 * 2**(-(time() - $t0) / 60);
note("usage saved at the first stop: $u0 (at least $u0_lo)");
cmp_ok($u0, '>=', $u0_lo,
	'saved usage: its 40 uses, decayed at most since the first one');
cmp_ok($u0, '<=', 40, 'saved usage: at most its 40 uses');

my $pos = -s $node->logfile;
my $a = time();
$node->start;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
my $b = time();
usleep(10_000) while time() < $b + 6;
my $c = time();
$node->stop('fast');
my $d = time();
my $u1 = saved_usage();

my $lo = $u0 * 2**(-($d - $a) / 60);
my $hi = $u0 * 2**(-($c - $b) / 60);
note(sprintf('usage saved at the second stop: %.6f; restored in %.3f s, '
	  . 'saved %.3f s later at least, %.3f s at most: bounds %.6f .. %.6f '
	  . '(ratio %.4f)', $u1, $b - $a, $c - $b, $d - $a, $lo, $hi, $u1 / $u0));
cmp_ok($u1, '>=', $lo, 'restored usage decayed at most by its time since the restore');
cmp_ok($u1, '<=', $hi, 'restored usage decayed at least by its time since the restore');

done_testing();
