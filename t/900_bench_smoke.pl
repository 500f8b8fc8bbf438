# Smoke test of the benchmark runner: "bash bench/run.sh --smoke" runs one
# short round of select_only (pgbench -S -M prepared, 1 client, 2 seconds)
# for the three variants (untracked, pg_stat_statements, pgss_ng) on its own
# throwaway cluster, then writes the report.  The report must be there and
# well-formed: the table header, one row per variant with a numeric TPS, the
# raw JSON, and the chart when gnuplot is installed.
#
# Runs as an unprivileged user (the runner then does not switch users).
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use File::Basename qw(dirname);
use Cwd qw(abs_path);

my $root   = abs_path(dirname(__FILE__) . '/..');
my $runner = "$root/bench/run.sh";
ok(-f $runner, 'bench/run.sh exists');

my $out = PostgreSQL::Test::Utils::tempdir('bench_smoke');

# Benchmark the server under test (its pg_config is first in PATH), not
# the runner's default PostgreSQL 15.
my $bindir = `pg_config --bindir`;
chomp $bindir;
local $ENV{PGSS_BENCH_PGBIN} = $bindir if $bindir ne '';

# The runner bounds its own runtime (300 s hard limit in smoke mode); this
# timeout is only a backstop.
my ($stdout, $stderr) = ('', '');
my @cmd = ('bash', $runner, '--smoke', '--out-dir', $out);
note("running: @cmd");
my $ok = IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr,
	IPC::Run::timeout(600));
note("stdout:\n$stdout");
note("stderr:\n$stderr") if $stderr ne '';
ok($ok, 'bench/run.sh --smoke exits with status 0');

opendir(my $dh, $out) or die "cannot open $out: $!";
my @files = sort grep { !/^\./ } readdir $dh;
closedir $dh;
note("output files: @files");

my @md   = grep { /-smoke\.md$/ } @files;
my @json = grep { /-smoke\.json$/ } @files;
is(scalar @md,   1, 'one markdown report');
is(scalar @json, 1, 'one JSON file');

SKIP:
{
	skip 'no report', 8 unless @md == 1;
	my $md = slurp_file("$out/$md[0]");

	like($md, qr/^# pgss_ng benchmark: smoke mode/m, 'report title');
	like($md, qr/\*\*machine\*\*: \d+ CPUs/, 'machine line');
	like($md, qr/\*\*commit\*\*: `[^`]+`/, 'commit');

	my @lines = split /\n/, $md;
	my ($hi) = grep {
		$lines[$_] =~ /^\| workload \| clients \| variant \| TPS \|/
	} 0 .. $#lines;
	ok(defined $hi, 'table header');
	skip 'no table header', 4 unless defined $hi;
	like($lines[ $hi + 1 ], qr/^\|( -+:? \|)+/, 'table separator line');

	my @hdr = map { s/^\s+|\s+$//gr } split /\|/, $lines[$hi];
	shift @hdr;
	my %col = map { $hdr[$_] => $_ } 0 .. $#hdr;
	my %tps;
	for my $l (@lines[ $hi + 2 .. $#lines ])
	{
		last unless $l =~ /^\|/;
		my @f = map { s/^\s+|\s+$//gr } split /\|/, $l;
		shift @f;
		next unless $f[ $col{workload} ] eq 'select_only';
		$tps{ $f[ $col{variant} ] } = $f[ $col{TPS} ];
	}
	is_deeply([ sort keys %tps ],
		[ sort 'untracked', 'pg_stat_statements', 'pgss_ng' ],
		'one select_only row per variant');
	my @bad = grep { $tps{$_} !~ /^[1-9][\d,]*(\.\d+)?$/ } sort keys %tps;
	is_deeply(\@bad, [], 'TPS is a positive number in every row')
	  or diag(explain \%tps);
	like($md, qr/^### Targets/m, 'targets section');
}

SKIP:
{
	skip 'no JSON', 2 unless @json == 1;
	my $data = decode_json(slurp_file("$out/$json[0]"));
	my @runs = @{ $data->{runs} || [] };
	is(scalar @runs, 3, 'three runs in the raw data');
	my @bad = grep { $_->{error} || !($_->{tps} && $_->{tps} > 0) } @runs;
	is(scalar @bad, 0, 'no run failed') or diag(explain \@bad);
}

SKIP:
{
	my $gnuplot = grep { -x "$_/gnuplot" } split /:/, ($ENV{PATH} // '');
	skip 'gnuplot is not installed: no chart expected', 1 unless $gnuplot;
	my @png = grep { /-smoke\.png$/ } @files;
	ok(@png == 1 && slurp_png_magic("$out/$png[0]"), 'PNG chart written');
}

done_testing();

sub slurp_png_magic
{
	my ($f) = @_;
	open my $fh, '<:raw', $f or return 0;
	read($fh, my $buf, 8);
	close $fh;
	return $buf eq "\x89PNG\r\n\x1a\n";
}
