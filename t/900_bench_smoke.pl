# Smoke test of the benchmark: "bash bench/run.sh --smoke" runs one short
# round of select_only (pgbench -S -M prepared, 1 client, 2 seconds) for the
# three variants (untracked, pg_stat_statements, pgss_ng) on its own
# throwaway cluster, then writes the results files.  Checked: the report is
# there and well-formed (the table header, one row per variant with a
# numeric TPS, the raw JSON, the chart when gnuplot is installed), and the
# benchmark measured what it says: pgss_ng was preloaded in its run and
# recorded pgbench's statement with one call per transaction pgbench
# counted (at most one more per client: a statement in flight when the run
# ended), as pg_stat_statements did in its run, and the untracked run
# recorded nothing.
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
my @VARIANTS = qw(none pgss pgss_ng);
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
	skip 'no report', 9 unless @md == 1;
	my $md = slurp_file("$out/$md[0]");

	like($md, qr/^# pgss_ng benchmark: smoke mode/m, 'report title');
	like($md, qr/\*\*machine\*\*: \d+ CPUs/, 'machine line');
	like($md, qr/\*\*commit\*\*: `[^`]+`/, 'commit');

	my @lines = split /\n/, $md;
	my ($hi) = grep {
		$lines[$_] =~ /^\| workload \| clients \| variant \| TPS \|/
	} 0 .. $#lines;
	ok(defined $hi, 'table header');
	skip 'no table header', 5 unless defined $hi;
	like($lines[ $hi + 1 ], qr/^\|( -+:? \|)+/, 'table separator line');

	my @hdr = map { s/^\s+|\s+$//gr } split /\|/, $lines[$hi];
	shift @hdr;
	my %col = map { $hdr[$_] => $_ } 0 .. $#hdr;
	my (%tps, %hot_kept);
	for my $l (@lines[ $hi + 2 .. $#lines ])
	{
		last unless $l =~ /^\|/;
		my @f = map { s/^\s+|\s+$//gr } split /\|/, $l;
		shift @f;
		next unless $f[ $col{workload} ] eq 'select_only';
		$tps{ $f[ $col{variant} ] } = $f[ $col{TPS} ];
		$hot_kept{ $f[ $col{variant} ] } = $f[ $col{'hot kept'} ];
	}
	is_deeply([ sort keys %tps ],
		[ sort 'untracked', 'pg_stat_statements', 'pgss_ng' ],
		'one select_only row per variant');
	my @bad = grep { $tps{$_} !~ /^[1-9][\d,]*(\.\d+)?$/ } sort keys %tps;
	is_deeply(\@bad, [], 'TPS is a positive number in every row')
	  or diag(explain \%tps);
	is($hot_kept{pgss_ng}, '100.0% of 1',
		"pgss_ng's row: pgbench's statement kept");
	like($md, qr/^### Targets/m, 'targets section');
}

SKIP:
{
	skip 'no JSON', 12 unless @json == 1;
	my $data = decode_json(slurp_file("$out/$json[0]"));
	my @runs = @{ $data->{runs} || [] };
	is(scalar @runs, 3, 'three runs in the raw data');
	my @bad = grep { $_->{error} || !($_->{tps} && $_->{tps} > 0) } @runs;
	is(scalar @bad, 0, 'no run failed') or diag(explain \@bad);

	# What each variant recorded, read by the runner after pgbench's
	# backends had exited (pgss_ng flushes at backend exit).
	my %run = map { $_->{variant} => $_ } @runs;
	unlike($data->{meta}{pgss_ng_so} // '', qr/^not installed/,
		'the runner found pgss_ng.so installed');
	is_deeply(
		{ map { $_ => $data->{settings}{$_}{shared_preload_libraries} } @VARIANTS },
		{ none => '', pgss => 'pg_stat_statements', pgss_ng => 'pgss_ng' },
		'each variant ran with its own shared_preload_libraries');
	for my $v ('pgss', 'pgss_ng')
	{
		my $r = $run{$v} || {};
		my $hot = $r->{hot} || {};
		my $txns = $r->{txns} // -1;
		ok($txns > 0, "$v: pgbench counted transactions ($txns)");
		is_deeply([ $hot->{n}, $hot->{present} ], [ 1, 1 ],
			"$v: pgbench's statement recorded");
		my $calls = $hot->{calls} // -1;
		ok($calls >= $txns && $calls <= $txns + $r->{clients},
			"$v: $calls calls for $txns transactions of $r->{clients} client(s)");
	}
	my $info = $run{pgss_ng}{info} || {};
	is($info->{dropped}, 0, 'pgss_ng: nothing dropped');
	is($info->{dealloc}, 0, 'pgss_ng: nothing evicted');
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
