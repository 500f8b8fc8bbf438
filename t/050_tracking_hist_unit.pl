# Unit test of the histogram module (src/stmt/hist.c): t/unit/hist_unit.c is
# compiled with the server's headers against src/stmt/hist.c alone (hist.c
# needs nothing of the server at run time), with hist.c's Assert()s
# compiled in (-DUSE_ASSERT_CHECKING; hist_unit.c reports a failed one),
# and run; each line it prints is one check (see t/unit/hist_unit.c's header):
# that the Assert()s are on, the bucket layout, the 4.95% bound of every
# quantile against exact quantiles of random data merged in random chunks
# (over the whole range 8 ns .. 5.3 days, the OLTP range 1 us .. 10 ms,
# sub-microsecond times, and wide spreads in the planning and execution
# histograms of one pair at once), the extremes, zero times, exact counts
# while the windows widen to every bucket, counts outside a window,
# saturation, and the check of a pair read from a file.  All of them must
# pass ($nchecks below): exactly that many "ok" lines and nothing else,
# exit status 0, nothing on stderr.  No server is started.
use strict;
use warnings;

use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

# The checks t/unit/hist_unit.c makes: change it with them.
my $nchecks = 43;

my $inc = `pg_config --includedir-server`;
chomp $inc;
my $cc = `pg_config --cc`;
chomp $cc;
$cc = 'cc' unless $cc;
my $dir = tempdir(CLEANUP => 1);
my $bin = "$dir/hist_unit";

my ($out, $err) = run_command(
	[
		split(' ', $cc), '-O2', '-DUSE_ASSERT_CHECKING', '-I', 'src',
		'-I', $inc, '-o', $bin, 't/unit/hist_unit.c', 'src/stmt/hist.c', '-lm'
	]);
ok(-x $bin, 'hist_unit compiled') or diag("$out\n$err");

($out, $err) = ('', '');
IPC::Run::run([$bin], '<', \undef, '>', \$out, '2>', \$err);
is($?, 0, 'hist_unit exited with status 0');
my @lines = split /\n/, $out;
is(scalar(grep { /^ok / } @lines), $nchecks, "all $nchecks checks passed")
  or diag($err);
for my $l (@lines)
{
	if ($l =~ /^ok (.*)$/)
	{
		pass($1);
	}
	else
	{
		fail($l);
	}
}
is($err, '', 'hist_unit wrote nothing to stderr');

done_testing();
