# PgssBench.pm: what the benchmark's run and report share.
#
# bench/pgss_bench_run.pl measures and writes the raw results (JSON);
# bench/pgss_bench_report.pl reads them and writes the results files.
# Both take their names from here: the workloads in report order, the
# variants, the modes, and the small helpers both need.  bench/run.sh
# starts the one, then the other.
#
# A mode is a named set of defaults for the run's options (%MODES below):
# adding one is one entry there; --help, run.sh and the report's title and
# file names follow.  A mode that measures something new also adds a probe
# to the run (@PROBES in pgss_bench_run.pl) and a section to the report
# (@SECTIONS in pgss_bench_report.pl); see docs/performance.md, "Adding a
# mode".
package PgssBench;

use strict;
use warnings;

use Exporter qw(import);
use Getopt::Long qw(GetOptionsFromArray);

our @EXPORT_OK = qw(@WORKLOADS @SCALE_WORKLOADS @VARIANTS %VNAME %MODES
  mode_usage parse_mode slurp spew median percentile);

# Workloads in report order.
our @WORKLOADS = qw(select_only tpcb hotcold_churn cold_only cold_long
  trickle view_read view_read_incremental);

# What --quick and --full run: every workload but cold_long (which only
# --sizes' text pressure points need).
my @MAIN_WORKLOADS = grep { $_ ne 'cold_long' } @WORKLOADS;

# The workloads whose client count varies (view_read and
# view_read_incremental always run with 4 and 1 clients).
our @SCALE_WORKLOADS = qw(select_only tpcb hotcold_churn cold_only trickle);

# Variants in report order, and their names in the report.
our @VARIANTS = qw(none pgss pgss_ng);
our %VNAME = (
	none    => 'untracked',
	pgss    => 'pg_stat_statements',
	pgss_ng => 'pgss_ng');

# Modes: the defaults of the run's options, and a line for --help
# (rounds x seconds per run, clients, time on 2 cores).  Every option
# overrides its mode's default.
our %MODES = (
	quick => {
		rounds    => 3,
		duration  => 3,
		clients   => '4',
		scale     => 2,
		workloads => join(',', @MAIN_WORKLOADS),
		budget    => 270,
		hard      => 600,
		help => '3 x 3 s, 4 clients, every workload            about 4 minutes',
	},
	# full: about 35 minutes on 2 cores (3 rounds of about 11.5 minutes:
	# 63 runs of 10 s plus about 0.5 s of warm-up and metrics each, and
	# the restarts)
	full => {
		rounds    => 3,
		duration  => 10,
		clients   => '1,4,16,64',
		scale     => 10,
		workloads => join(',', @MAIN_WORKLOADS),
		budget    => 3600,
		hard      => 5400,
		help => '3 x 10 s, 1/4/16/64 clients, every workload   about 35 minutes',
	},
	# scale: the pgbench workloads at 1, 4, 16 and 64 clients, one round
	# (about 6 minutes: 60 runs of 5 s plus set-up)
	scale => {
		rounds    => 1,
		duration  => 5,
		clients   => '1,4,16,64',
		scale     => 10,
		workloads => join(',', @SCALE_WORKLOADS),
		budget    => 900,
		hard      => 1500,
		help => "1 x 5 s, 1/4/16/64 clients, the pgbench\n"
		  . '           workloads (not view_read*)                    about 6 minutes',
	},
	# sizes: the cost as the table grows (issue 19): cold_only and
	# hotcold_churn at max = 1,000, 5,000, 20,000 and 50,000 (the "size
	# points"), and cold_long (2 kB texts) at max 5,000 with and without
	# text pressure; about 25 minutes (3 rounds of 20 runs of 10 s, each
	# after a fill of the table to max, plus an eviction probe per run).
	# The untracked server runs at the max 5,000 and no-pressure points
	# only (it has no max).
	sizes => {
		rounds    => 3,
		duration  => 10,
		clients   => '4',
		scale     => 1,
		workloads => 'hotcold_churn,cold_only',
		sizes     => '1000,5000,20000,50000',
		pressure  => 5000,
		budget    => 2400,
		hard      => 3600,
		help => "3 x 10 s, 4 clients, cold_only and hotcold_churn\n"
		  . "           at max 1,000-50,000, cold_long with and without\n"
		  . '           text pressure; eviction time, memory      about 25 minutes',
	},
	# cpu: backend CPU per transaction at one client (schedstat of the
	# pgbench backend), 5 rounds of 10 s (about 6 minutes)
	cpu => {
		rounds      => 5,
		duration    => 10,
		clients     => '1',
		scale       => 2,
		workloads   => 'select_only,cold_only',
		backend_cpu => 1,
		budget      => 900,
		hard        => 1500,
		help => "5 x 10 s, 1 client, select_only and cold_only:\n"
		  . '           backend CPU per transaction (schedstat)     about 6 minutes',
	},
	smoke => {
		rounds    => 1,
		duration  => 2,
		clients   => '1',
		scale     => 1,
		workloads => 'select_only',
		budget    => 120,
		hard      => 300,
		help => '1 x 2 s, 1 client, select_only                about 10 seconds',
	},
);

# The modes' lines of --help, in a fixed order (the ones above first).
sub mode_usage
{
	my @order = grep { $MODES{$_} } qw(quick full scale sizes cpu smoke);
	push @order, sort grep { my $m = $_; !grep { $_ eq $m } @order } keys %MODES;
	return join('', map { sprintf("  --%-6s %s\n", $_, $MODES{$_}{help}) } @order);
}

# Take the mode's flags (--quick, --full, ... or --mode NAME) out of @$argv
# and return the mode's name (quick when none is given).
sub parse_mode
{
	my ($argv) = @_;
	my %o;
	Getopt::Long::Configure('pass_through');
	GetOptionsFromArray($argv, \%o, 'mode=s', keys %MODES)
	  or die "bad mode option\n";
	Getopt::Long::Configure('no_pass_through');
	my @given = grep { $o{$_} } sort keys %MODES;
	push @given, $o{mode} if defined $o{mode};
	die "give one mode, not " . join(' and ', map { "--$_" } @given) . "\n"
	  if @given > 1;
	my $mode = $given[0] // 'quick';
	die "unknown mode $mode (modes: " . join(', ', sort keys %MODES) . ")\n"
	  unless $MODES{$mode};
	return $mode;
}

sub slurp
{
	my ($f) = @_;
	open my $fh, '<', $f or die "cannot read $f: $!\n";
	local $/;
	my $s = <$fh>;
	close $fh;
	return $s;
}

# Write a file whole: a temporary file renamed over it.
sub spew
{
	my ($f, $s) = @_;
	open my $fh, '>', "$f.tmp$$" or die "cannot write $f: $!\n";
	print $fh $s;
	close $fh or die "cannot write $f: $!\n";
	rename "$f.tmp$$", $f or die "cannot rename to $f: $!\n";
}

sub median
{
	my @v = sort { $a <=> $b } grep { defined } @_;
	return undef unless @v;
	my $n = @v;
	return $n % 2 ? $v[ ($n - 1) / 2 ] : ($v[ $n / 2 - 1 ] + $v[ $n / 2 ]) / 2;
}

# The value at fraction $p (0..1) of the sorted values, nearest rank.
sub percentile
{
	my ($p, @v) = @_;
	@v = sort { $a <=> $b } grep { defined } @v;
	return undef unless @v;
	my $i = int($p * (@v - 1) + 0.5);
	return $v[$i];
}

1;
