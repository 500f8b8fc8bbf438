# Smoke test of the benchmark: "bash bench/run.sh --smoke" runs one short
# round of select_only (pgbench -S -M prepared, 1 client, here 4 seconds
# with the backend CPU probe of --cpu mode) for the three variants
# (untracked, pg_stat_statements, pgss_ng) on its own throwaway cluster,
# then writes the results files.  Checked: the report is there and
# well-formed (the table header, one row per variant with a numeric TPS,
# the raw JSON, the chart when gnuplot is installed), and the benchmark
# measured what it says: pgss_ng was preloaded in its run and recorded
# pgbench's statement with one call per transaction pgbench counted (at
# most one more per client: a statement in flight when the run ended), as
# pg_stat_statements did in its run, and the untracked run recorded
# nothing; the CPU probe found one backend and counted a part of the
# transactions.
#
# Then a tiny --sizes run (cold_only at max 100 and 200, cold_long at max
# 300 with and without text pressure, 1 s runs): every settings point ran
# the variants it should, each with its own max and text memory, every
# tracked run found the table full (the fill) and its eviction probe saw
# evictions, and the report has the sizes and text pressure tables and
# their targets.
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
my @cmd = ('bash', $runner, '--smoke', '--backend-cpu', '--duration', '4',
	'--out-dir', $out);
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
	my @cpu_rows = grep { /^\| select_only \| 1 \| [^|]+ \| \d[\d,]*\.\d \|/ }
	  section_lines($md, 'Backend CPU per transaction');
	is(scalar @cpu_rows, 3, 'backend CPU section: a row per variant')
	  or diag(join("\n", @cpu_rows));
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

	# the backend CPU probe: one backend, part of the run's transactions
	for my $v (@VARIANTS)
	{
		my $r = $run{$v} || {};
		my $b = $r->{backend_cpu} || {};
		ok(($b->{backends} // 0) == 1 && ($b->{us_per_txn} // 0) > 0
			  && ($b->{txns} // 0) > 0 && $b->{txns} < ($r->{txns} // 0),
			"$v: backend CPU probe measured one backend over part of the run")
		  or diag(explain $b);
	}
}

SKIP:
{
	my $gnuplot = grep { -x "$_/gnuplot" } split /:/, ($ENV{PATH} // '');
	skip 'gnuplot is not installed: no chart expected', 1 unless $gnuplot;
	my @png = grep { /-smoke\.png$/ } @files;
	ok(@png == 1 && slurp_png_magic("$out/$png[0]"), 'PNG chart written');
}

# ---- a tiny --sizes run
my $out2 = PostgreSQL::Test::Utils::tempdir('bench_sizes');
($stdout, $stderr) = ('', '');
@cmd = ('bash', $runner, '--sizes', '--sizes-max', '100,200',
	'--pressure-max', '300', '--workloads', 'cold_only', '--rounds', '1',
	'--duration', '1', '--out-dir', $out2);
note("running: @cmd");
$ok = IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr,
	IPC::Run::timeout(600));
note("stdout:\n$stdout");
note("stderr:\n$stderr") if $stderr ne '';
ok($ok, 'bench/run.sh --sizes (tiny) exits with status 0');
opendir($dh, $out2) or die "cannot open $out2: $!";
my @f2 = sort grep { !/^\./ } readdir $dh;
closedir $dh;
my ($smd) = grep { /-sizes\.md$/ } @f2;
my ($sjson) = grep { /-sizes\.json$/ } @f2;

SKIP:
{
	skip 'no --sizes JSON', 8 unless $sjson;
	my $data = decode_json(slurp_file("$out2/$sjson"));
	my @runs = @{ $data->{runs} || [] };
	is_deeply(
		[ sort map { "$_->{point}/$_->{variant}/$_->{workload}" } @runs ],
		[
			sort 'max 100/none/cold_only', 'max 100/pgss/cold_only',
			'max 100/pgss_ng/cold_only', 'max 200/pgss/cold_only',
			'max 200/pgss_ng/cold_only', 'text pressure/pgss_ng/cold_long',
			'no text pressure/none/cold_long',
			'no text pressure/pgss/cold_long',
			'no text pressure/pgss_ng/cold_long'
		],
		'each settings point ran its variants and workload');
	my @bad = grep { $_->{error} } @runs;
	is(scalar @bad, 0, 'no --sizes run failed') or diag(explain \@bad);
	my %max = ('max 100' => 100, 'max 200' => 200,
		'text pressure' => 300, 'no text pressure' => 300);
	my $sp = $data->{settings_by_point} || {};
	is_deeply(
		{ map { my $pt = $_; ($pt => [
			$sp->{$pt}{pgss_ng}{'pgss_ng.max'},
			($sp->{$pt}{pgss} || {})->{'pg_stat_statements.max'} ]) } sort keys %max },
		{
			'max 100' => [ 100, 100 ], 'max 200' => [ 200, 200 ],
			'text pressure' => [ 300, undef ],
			'no text pressure' => [ 300, 300 ]
		},
		'each point ran with its max');
	my %qlimit = map { ($_->{point} => $_->{info}{qtext_limit_bytes}) }
	  grep { $_->{variant} eq 'pgss_ng' } @runs;
	is_deeply(
		[ @qlimit{ 'text pressure', 'no text pressure' } ],
		[ 256 * 1024, 18 * 1024 * 1024 ],
		'text pressure: 256 kB of text memory, no text pressure: 18 MB');
	# the fill: the table at max when the run started (pgss_ng evicts
	# 5% below max; at the pressure point texts bound it, not max)
	my @unfilled = grep {
		$_->{variant} ne 'none' && $_->{point} ne 'text pressure'
		  && ($_->{entries_before} // 0) < 0.9 * $max{ $_->{point} }
	} @runs;
	is(scalar @unfilled, 0, 'every tracked run started with a full table')
	  or diag(explain [ map { [ $_->{point}, $_->{variant}, $_->{entries_before} ] } @unfilled ]);
	my @noevict = grep {
		$_->{variant} ne 'none'
		  && !(($_->{evict_probe}{evictions} // 0) > 0
			&& ($_->{evict_probe}{dealloc_delta} // 0) > 0)
	} @runs;
	is(scalar @noevict, 0, 'every eviction probe saw evictions')
	  or diag(explain [ map { $_->{evict_probe} } @noevict ]);
	my @nomem = grep {
		$_->{variant} eq 'pgss_ng' && !(($_->{shmem}{named} // 0) > 0)
	} @runs;
	is(scalar @nomem, 0, "pgss_ng's named shared memory found in every run");

	skip 'no --sizes report', 1 unless $smd;
	my $md = slurp_file("$out2/$smd");
	my @sz = grep { /^\| cold_only \| [\d,]+ \| [^|]+ \| [\d,]+ \|/ }
	  section_lines($md, 'Sizes: the cost as the table grows');
	my @tp = grep { /^\| (no )?text pressure \| [^|]+ \| [\d,]+ \|/ }
	  section_lines($md, 'Text pressure');
	ok(@sz == 5 && @tp == 4
		  && $md =~ /^- sizes: pgss_ng cold_only TPS at max 200 within 5% /m
		  && $md =~ /^- text pressure: pgss_ng cold_long within 10% /m,
		'sizes report: 5 size rows, 4 text pressure rows, both targets')
	  or diag($md);
}

done_testing();

# The lines of the report section titled "### $title", up to the next.
sub section_lines
{
	my ($md, $title) = @_;
	my ($body) = $md =~ /^### \Q$title\E\n(.*?)(?=^### |\z)/ms;
	return split /\n/, $body // '';
}

sub slurp_png_magic
{
	my ($f) = @_;
	open my $fh, '<:raw', $f or return 0;
	read($fh, my $buf, 8);
	close $fh;
	return $buf eq "\x89PNG\r\n\x1a\n";
}
