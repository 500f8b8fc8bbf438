#!/usr/bin/perl
# pgss_bench_report.pl: the benchmark's report.  Reads the raw results that
# bench/pgss_bench_run.pl wrote (--json-in) and writes three results files
# into --out-dir (default bench/results): <name>.md (the report), <name>.json
# (the raw results, copied) and <name>.png (the chart, when gnuplot is
# installed).  <name> is --name, default <UTC stamp>-<mode>.  It edits
# nothing else: docs/performance.md links to the results files it quotes.
#
#   perl bench/pgss_bench_report.pl --json-in FILE [--out-dir DIR] [--name STEM]
#
# Any older results file's .json can be read again to rewrite its report.
# The report is the sections of @SECTIONS, in order, each made from the
# runs summarized by (workload, settings point, clients, variant) in
# summarize(); runs without a point (every mode but --sizes) form one.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Getopt::Long qw(GetOptionsFromArray);
use JSON::PP;
use File::Temp qw(tempdir);
use File::Path qw(make_path);

use PgssBench qw(@WORKLOADS @VARIANTS %VNAME slurp spew median);

# pgss_ng's TPS targets, of the untracked server's (others: 0.97).
my %TPS_TARGET = (select_only => 0.97, tpcb => 0.97, trickle => 0.97,
	hotcold_churn => 0.95, cold_only => 0.85, cold_long => 0.85);

# The report's sections after its title, in order: each takes
# ($data, $rows, $png) and returns its lines (none to leave it out).
my @SECTIONS = (
	\&section_setup, \&section_tps, \&section_scaling, \&section_failed,
	\&section_sizes, \&section_text_pressure, \&section_backend_cpu,
	\&section_view_read, \&section_view_read_incremental,
	\&section_pgss_ng_info, \&section_targets, \&section_short_runs,
	\&section_chart,
);

my %opt;
GetOptionsFromArray(\@ARGV, \%opt, 'json-in=s', 'out-dir=s', 'name=s', 'help')
  or die "usage: pgss_bench_report.pl --json-in FILE [--out-dir DIR] [--name STEM]\n";
if ($opt{help})
{
	print "usage: pgss_bench_report.pl --json-in FILE [--out-dir DIR] [--name STEM]\n";
	exit 0;
}
die "unexpected arguments: @ARGV\n" if @ARGV;
die "--json-in FILE is needed (the raw results of pgss_bench_run.pl)\n"
  unless $opt{'json-in'};
$opt{'out-dir'} //= "$FindBin::RealBin/results";

my $data = decode_json(slurp($opt{'json-in'}));
exit(report($data));

# Write the results files; 1 when some run failed.
sub report
{
	my ($data) = @_;
	my $m = $data->{meta};
	my $out = $opt{'out-dir'};
	make_path($out);
	my $name = $opt{name} // "$m->{stamp}-$m->{mode}";
	my $rows = summarize($data);
	spew("$out/$name.json", JSON::PP->new->canonical->pretty->encode($data));
	my $png = "$name.png";
	my $title = "pgss_ng benchmark, $m->{mode} mode, $m->{date}, commit $m->{commit}";
	my $have_png = make_chart($rows, "$out/$png", $title);
	my @body;
	for my $section (@SECTIONS)
	{
		my @lines = $section->($data, $rows, $have_png ? $png : undef);
		push @body, '', @lines if @lines;
	}
	shift @body;
	my $md = "# pgss_ng benchmark: $m->{mode} mode, $m->{date}\n\n"
	  . join("\n", @body) . "\n"
	  . "\nRaw data: [$name.json]($name.json). Reproduce: `bash bench/run.sh --$m->{mode}` "
	  . "(see docs/performance.md).\n";
	spew("$out/$name.md", $md);
	print "report: $out/$name.md\n";
	print "chart:  $out/$png\n" if $have_png;
	print "\n$md" unless $m->{mode} eq 'smoke';
	my $errors = grep { $_->{error} } @{ $data->{runs} };
	return $errors ? 1 : 0;
}

# ---------------------------------------------------------------- summary

sub fmt_num
{
	my ($x, $d) = @_;
	return '-' unless defined $x;
	$d //= 0;
	my $s = sprintf("%.${d}f", $x);
	1 while $s =~ s/^(-?\d+)(\d{3})/$1,$2/;
	return $s;
}

sub fmt_bytes
{
	my ($b) = @_;
	return '-' unless defined $b;
	return sprintf('%.1f MB', $b / 1048576) if $b >= 1048576;
	return sprintf('%.0f kB', $b / 1024) if $b >= 1024;
	return "$b B";
}

sub fmt_ratio { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-'; }

# A run's workload as the tables name it: with its settings point, if any.
sub wl_label
{
	my ($s) = @_;
	return defined $s->{point} ? "$s->{workload} ($s->{point})" : $s->{workload};
}
sub fmt_pct { my ($r) = @_; return defined $r ? sprintf('%.1f%%', 100 * $r) : '-'; }

# Group runs by (workload, point, clients, variant) and summarize; points
# in the order of the run's meta data (runs without one: a single group).
sub summarize
{
	my ($data) = @_;
	my %g;
	for my $run (@{ $data->{runs} })
	{
		push @{ $g{ $run->{workload} }{ $run->{point} // '' }{ $run->{clients} }{ $run->{variant} } }, $run;
	}
	my @points = map { $_->{name} } @{ $data->{meta}{points} || [] };
	@points = ('') unless @points;
	my %max = map { ($_->{name} => $_->{max}) } @{ $data->{meta}{points} || [] };
	# the untracked server's shared memory: what the extensions' is
	# measured against (--sizes)
	my @none_sh = map { $_->{shmem} } grep { $_->{variant} eq 'none' && $_->{shmem} } @{ $data->{runs} };
	my $none_anon = median(map { $_->{anon} } @none_sh);
	my $none_dsm = median(map { $_->{dsm} } @none_sh);
	# the untracked server's backend CPU per transaction, by round
	my %none_cpu;
	for my $run (@{ $data->{runs} })
	{
		next unless $run->{variant} eq 'none' && $run->{backend_cpu}
		  && defined $run->{backend_cpu}{us_per_txn} && !$run->{error};
		$none_cpu{ $run->{workload} }{ $run->{point} // '' }{ $run->{clients} }{ $run->{round} }
		  = $run->{backend_cpu}{us_per_txn};
	}
	my @rows;
	for my $w (@WORKLOADS)
	{
		next unless $g{$w};
		for my $pt (grep { $g{$w}{$_} } @points)
		{
		for my $c (sort { $a <=> $b } keys %{ $g{$w}{$pt} })
		{
			my %byv;
			for my $v (@VARIANTS)
			{
				my $runs = $g{$w}{$pt}{$c}{$v} or next;
				my @ok = grep { defined $_->{tps} && !$_->{error} } @$runs;
				my %s = (workload => $w, clients => $c, variant => $v,
					rounds => scalar @ok, errors => scalar(@$runs) - scalar(@ok));
				if ($pt ne '')
				{
					$s{point} = $pt;
					$s{max} = $max{$pt};
				}
				$s{error_text} = (grep { $_ } map { $_->{error} } @$runs)[0];
				my @tps = map { $_->{tps} } @ok;
				$s{tps}     = median(@tps);
				$s{tps_min} = (sort { $a <=> $b } @tps)[0];
				$s{tps_max} = (sort { $b <=> $a } @tps)[0];
				$s{tps_all} = \@tps;
				my @hot = grep { $_->{hot} && $_->{hot}{n} } @ok;
				if (@hot)
				{
					my @ret = map { $_->{hot}{present} / $_->{hot}{n} } @hot;
					my @cov = map { $_->{hot}{expected_calls} ? $_->{hot}{calls} / $_->{hot}{expected_calls} : undef } @hot;
					$s{hot_n} = $hot[0]{hot}{n};
					$s{hot_kept_min} = (sort { $a <=> $b } @ret)[0];
					$s{hot_kept_med} = median(@ret);
					my @c = sort { $a <=> $b } grep { defined } @cov;
					$s{hot_calls_min} = $c[0];
					$s{hot_calls_max} = $c[-1];
				}
				$s{entries} = median(map { $_->{entries} } @ok);
				$s{dealloc} = median(map { $_->{info} ? $_->{info}{dealloc} : undef } @ok);
				$s{qtext_bytes} = median(map { $_->{qtext_bytes} } @ok);
				my %info;
				for my $run (@ok)
				{
					next unless $run->{info};
					for my $k (keys %{ $run->{info} })
					{
						my $val = $run->{info}{$k};
						push @{ $info{$k} }, $val if defined $val && !ref $val && $val =~ /^-?\d+(\.\d+)?$/;
					}
				}
				$s{info} = { map { $_ => median(@{ $info{$_} }) } keys %info };
				my %waits;
				for my $run (@ok)
				{
					$waits{$_} += $run->{waits}{$_} for keys %{ $run->{waits} || {} };
				}
				$s{waits} = \%waits;
				summarize_sized(\%s, \@ok, $v, $none_anon, $none_dsm);
				my @cpu = grep { $_->{backend_cpu} && defined $_->{backend_cpu}{us_per_txn} } @ok;
				if (@cpu)
				{
					my @us = map { $_->{backend_cpu}{us_per_txn} } @cpu;
					my $nc = $none_cpu{$w}{$pt}{$c} || {};
					my @extra = map { $_->{backend_cpu}{us_per_txn} - $nc->{ $_->{round} } }
					  grep { defined $nc->{ $_->{round} } } @cpu;
					$s{cpu_us} = median(@us);
					$s{cpu_us_min} = (sort { $a <=> $b } @us)[0];
					$s{cpu_us_max} = (sort { $b <=> $a } @us)[0];
					$s{cpu_extra} = median(@extra);
					$s{cpu_extra_all} = [ map { sprintf('%.2f', $_) + 0 } @extra ];
				}
				$s{full_rows} = median(map { $_->{full_rows} } @ok);
				$s{incremental_rows} = median(map { $_->{incremental_rows} } @ok);
				my @rd = grep { $_->{reader} && ($_->{reader}{view} || $_->{reader}{full}) } @ok;
				if (@rd)
				{
					for my $k (qw(view fn full incremental))
					{
						my @x = grep { $_->{reader}{$k} } @rd;
						next unless @x;
						$s{reader}{$k} = {
							median => median(map { $_->{reader}{$k}{median} } @x),
							p95    => median(map { $_->{reader}{$k}{p95} } @x),
							n      => median(map { $_->{reader}{$k}{n} } @x),
						};
					}
				}
				$byv{$v} = \%s;
			}
			for my $v (keys %byv)
			{
				my $s = $byv{$v};
				$s->{vs_none} = $byv{none} && $byv{none}{tps} && defined $s->{tps}
				  ? $s->{tps} / $byv{none}{tps} : undef;
				$s->{vs_pgss} = $byv{pgss} && $byv{pgss}{tps} && defined $s->{tps}
				  ? $s->{tps} / $byv{pgss}{tps} : undef;
			}
			push @rows, map { $byv{$_} } grep { $byv{$_} } @VARIANTS;
		}
		}
	}
	return \@rows;
}

# --sizes' measurements of one group of runs ($ok) into its summary $s:
# the shared memory in use (above the untracked server's), and the time
# spent evicting in a run: pgss_ng_info.eviction_time where the build has
# it, else from the outside, the eviction runs of the benchmark run times
# the time of one, as the eviction probe after it measured (its evicting
# statements' median less the others').  Eviction runs: pg_stat_statements'
# dealloc; pgss_ng's dealloc where it counts runs (builds with
# entries_evicted), else its entries evicted divided by the entries one
# eviction removed in the probe.
sub summarize_sized
{
	my ($s, $ok, $v, $none_anon, $none_dsm) = @_;
	my @sh = grep { $_->{shmem} } @$ok;
	if (@sh && $v ne 'none')
	{
		$s->{shmem_bytes} = median(map {
			my $m = $_->{shmem};
			$m->{named} + (defined $none_anon ? $m->{anon} - $none_anon : 0)
			  + $m->{dsm} - ($none_dsm // 0)
		} @sh);
	}
	my (@per_run, @one, $src);
	for my $run (@$ok)
	{
		my $info = $run->{info} || {};
		if (defined $info->{eviction_time})
		{
			push @per_run, $info->{eviction_time} / 1000;
			$src = 'pgss_ng_info.eviction_time';
			next;
		}
		my $e = $run->{evict_probe} or next;
		next unless $e->{evictions} && defined $e->{evict_ms};
		my $one = ($e->{evict_ms} - ($e->{other_ms} // 0)) / 1000;
		$one = 0 if $one < 0;
		push @one, $one;
		my $runs = $info->{dealloc} // 0;
		if ($v eq 'pgss_ng' && !exists $info->{entries_evicted} && $e->{dealloc_delta})
		{
			$runs = $runs * $e->{evictions} / $e->{dealloc_delta};
		}
		$s->{eviction_runs_all} //= [];
		push @{ $s->{eviction_runs_all} }, $runs;
		push @per_run, $runs * $one;
		$src //= 'probe';
	}
	$s->{eviction_s} = median(@per_run);
	$s->{eviction_one_ms} = @one ? 1000 * median(@one) : undef;
	$s->{eviction_runs} = median(@{ $s->{eviction_runs_all} || [] });
	$s->{eviction_src} = $src;
	$s->{probe_evictions} = median(map { $_->{evict_probe} ? $_->{evict_probe}{evictions} : undef } @$ok);
}

# Top $k events among the samples of busy backends (not idle between
# transactions), with how many samples were busy.
sub top_waits
{
	my ($w, $k) = @_;
	my ($tot, $busy) = (0, 0);
	for my $e (keys %$w)
	{
		$tot += $w->{$e};
		$busy += $w->{$e} unless $e =~ /^idle/;
	}
	return '-' unless $tot;
	return "all idle (n=$tot)" unless $busy;
	my @e = sort { $w->{$b} <=> $w->{$a} || $a cmp $b } grep { !/^idle/ } keys %$w;
	@e = @e[ 0 .. $k - 1 ] if @e > $k;
	return join(', ', map { sprintf('%s %.0f%%', $_, 100 * $w->{$_} / $busy) } @e)
	  . " ($busy of $tot busy)";
}

# The report body (everything after the title), shared by the results file
# and docs/performance.md.

# ---------------------------------------------------------------- sections

# What ran, where, and with which settings.
sub section_setup
{
	my ($data) = @_;
	my $m = $data->{meta};
	my $mc = $m->{machine};
	my @o;
	push @o, "- **date**: $m->{date}; **commit**: `$m->{commit}`; "
	  . "**mode**: $m->{mode} ($m->{rounds_done} of $m->{rounds} rounds, "
	  . "$m->{duration} s per run, clients " . join(', ', @{ $m->{clients} })
	  . ", pgbench scale $m->{scale}; took $m->{seconds} s)";
	push @o, "- **machine**: $mc->{nproc} CPUs ($mc->{cpu_model}), "
	  . "$mc->{memory_gib} GiB RAM, $mc->{kernel}; load average at start "
	  . "$m->{load_start}, at end $m->{load_end}";
	push @o, "- **pgss_ng build measured**: $m->{pgss_ng_so}" if $m->{pgss_ng_so};
	push @o, "- **server**: $m->{pg_version}; one throwaway cluster, unix socket "
	  . "only, shared_buffers = 256MB, fsync/synchronous_commit/full_page_writes "
	  . "off, autovacuum off, jit off; restarted for each variant in each round "
	  . "(order rotated every round)";
	my $maxes = $m->{points}
	  ? 'max by settings point (' . join('; ', map {
			my $p = $_;
			"$p->{name}: " . fmt_num($p->{max})
			  . join('', map { ", $_ = $p->{ng}{$_}" } sort keys %{ $p->{ng} || {} })
		} @{ $m->{points} }) . ')'
	  : "max = $m->{max}";
	push @o, "- **tracking settings** (both extensions): $maxes, "
	  . "track = $m->{track}, track_utility = on, track_planning = off"
	  . " (pg_stat_statements.save = off)";
	push @o, "- **backend CPU probe** on: pgbench runs with `--log` (one line "
	  . "per transaction)" if $m->{backend_cpu};
	for my $v (qw(pgss pgss_ng))
	{
		my $s = $data->{settings}{$v} or next;
		my @k = grep { /^(pg_stat_statements|pgss_ng)\./ } sort keys %$s;
		push @o, "- **$VNAME{$v} GUCs as set**: "
		  . join(', ', map { "`$_=$s->{$_}`" } @k) if @k;
	}
	push @o, "- **note**: $_" for @{ $data->{notes} || [] };
	return @o;
}

# One row per workload, client count and variant.
sub section_tps
{
	my ($data, $rows) = @_;
	my @o;
	push @o, "TPS is the median over rounds (pgbench \"without initial connection "
	  . "time\"); the ratios compare medians. *hot kept*: hot shapes present at "
	  . "the end (worst round). *hot calls*: calls recorded for the hot set / "
	  . "executions pgbench made plus the warm-up (worst round; counts for "
	  . "select_only and tpcb are taken from the statement texts). *text memory*: "
	  . "pg_stat_statements' query text file; pgss_ng_info.qtext_bytes (\"-\" "
	  . "when that column does not exist). *top waits*: pg_stat_activity of the "
	  . "pgbench backends sampled once a second; shares among the samples of "
	  . "busy backends (active, or idle in a transaction), CPU = active "
	  . "without a wait event; then how many samples were busy (the rest were "
	  . "idle, waiting for pgbench).";
	push @o, '';
	push @o, '| workload | clients | variant | TPS | range | vs untracked | vs pg_stat_statements | hot kept | hot calls | entries | dealloc | text memory | top waits |';
	push @o, '| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |';
	for my $s (@$rows)
	{
		my $tps = defined $s->{tps} ? fmt_num($s->{tps}) : 'error';
		my $range = defined $s->{tps_min} && @{ $s->{tps_all} } > 1
		  ? fmt_num($s->{tps_min}) . ' – ' . fmt_num($s->{tps_max}) : '-';
		$range .= " ($s->{errors} failed)" if $s->{errors};
		my $hk = defined $s->{hot_kept_min} ? fmt_pct($s->{hot_kept_min}) . " of $s->{hot_n}" : '-';
		my $hc = defined $s->{hot_calls_min} ? fmt_pct($s->{hot_calls_min}) : '-';
		my $wl = wl_label($s);
		$wl .= ' (churn TPS, 1 reader)' if $wl eq 'view_read';
		push @o, join(' | ', '', $wl, $s->{clients}, $VNAME{ $s->{variant} },
			$tps, $range,
			$s->{variant} eq 'none' ? '1.00x' : fmt_ratio($s->{vs_none}),
			$s->{variant} eq 'pgss' ? '1.00x' : fmt_ratio($s->{vs_pgss}),
			$hk, $hc, fmt_num($s->{entries}), fmt_num($s->{dealloc}),
			fmt_bytes($s->{qtext_bytes}), top_waits($s->{waits}, 3), '');
		$o[-1] =~ s/^ //;
		$o[-1] =~ s/ $//;
	}
	return @o;
}

# One row per workload and client count, when several client counts ran.
sub section_scaling
{
	my ($data, $rows) = @_;
	my %ncl;
	$ncl{ $_->{clients} } = 1 for @$rows;
	return () unless keys %ncl > 1;
	my @o;
	push @o, '### Scaling: TPS by client count';
	push @o, '';
	push @o, "The same medians as above, one row per workload and client "
	  . "count; *top waits* as above, of each variant's backends (top 2).";
	push @o, '';
	push @o, '| workload | clients | untracked | pg_stat_statements | pgss_ng | pgss_ng / untracked | pgss_ng / pg_stat_statements | top waits untracked | top waits pg_stat_statements | top waits pgss_ng |';
	push @o, '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |';
	my %cell;
	my @labels;
	for my $s (@$rows)
	{
		my $l = wl_label($s);
		push @labels, $l unless $cell{$l};
		$cell{$l}{ $s->{clients} }{ $s->{variant} } = $s;
	}
	for my $w (grep { !/^view_read/ } @labels)
	{
		for my $c (sort { $a <=> $b } keys %{ $cell{$w} })
		{
			my $b = $cell{$w}{$c};
			my $ng = $b->{pgss_ng} || {};
			push @o, '| ' . join(' | ', $w, $c,
				(map { $b->{$_} && defined $b->{$_}{tps} ? fmt_num($b->{$_}{tps}) : '-' } @VARIANTS),
				fmt_ratio($ng->{vs_none}), fmt_ratio($ng->{vs_pgss}),
				(map { $b->{$_} ? top_waits($b->{$_}{waits}, 2) : '-' } @VARIANTS)) . ' |';
		}
	}
	return @o;
}

sub section_failed
{
	my ($data, $rows) = @_;
	my @errs = grep { $_->{errors} } @$rows;
	return () unless @errs;
	return "**Failed runs**: "
	  . join('; ', map { "$_->{workload} c=$_->{clients} $VNAME{$_->{variant}}: $_->{errors} ($_->{error_text})" } @errs);
}

# --sizes: TPS, eviction time and memory of each workload at each max.
sub section_sizes
{
	my ($data, $rows) = @_;
	my @sz = grep { defined $_->{max} && ($_->{point} // '') =~ /^max / } @$rows;
	return () unless @sz;
	my @o;
	push @o, '### Sizes: the cost as the table grows';
	push @o, '';
	push @o, "Each workload at each `max` (both extensions; the untracked "
	  . "server once, where it ran). Before each run the table is filled to "
	  . "max with the workload's new statements, so every run evicts from its "
	  . "start. *vs smallest max*: the variant's TPS against its own at the "
	  . "smallest max (medians). *eviction*: time spent evicting in a run "
	  . "(median over rounds), " . eviction_source_text(\@sz)
	  . " *shared memory*: what the extension holds in shared memory after "
	  . "the run, above the untracked server (pg_shmem_allocations, and the "
	  . "DSM segments a backend maps after a full read: where pgss_ng's DSA "
	  . "area grows). *text memory*: pg_stat_statements' query text file, "
	  . "pgss_ng_info.qtext_bytes.";
	push @o, '';
	push @o, '| workload | max | variant | TPS | range | vs smallest max | pgss_ng / pg_stat_statements | entries | eviction runs | one eviction | eviction per run | shared memory | text memory |';
	push @o, '| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	my %first;
	for my $s (sort { $a->{max} <=> $b->{max} } @sz)
	{
		$first{ $s->{workload} }{ $s->{variant} } //= $s;
	}
	for my $s (@sz)
	{
		my $f = $first{ $s->{workload} }{ $s->{variant} };
		my $rel = $f && $f->{tps} && defined $s->{tps} && $f != $s
		  ? fmt_ratio($s->{tps} / $f->{tps}) : ($f == $s ? '1.00x' : '-');
		my $range = @{ $s->{tps_all} } > 1
		  ? fmt_num($s->{tps_min}) . ' – ' . fmt_num($s->{tps_max}) : '-';
		push @o, '| ' . join(' | ', $s->{workload}, fmt_num($s->{max}),
			$VNAME{ $s->{variant} }, fmt_num($s->{tps}), $range, $rel,
			$s->{variant} eq 'pgss_ng' ? fmt_ratio($s->{vs_pgss}) : '',
			fmt_num($s->{entries}), fmt_num($s->{eviction_runs}),
			defined $s->{eviction_one_ms} ? fmt_num($s->{eviction_one_ms}, 2) . ' ms' : '-',
			defined $s->{eviction_s} ? fmt_num($s->{eviction_s}, 3) . ' s' : '-',
			fmt_bytes($s->{shmem_bytes}), fmt_bytes($s->{qtext_bytes})) . ' |';
	}
	return @o;
}

# How the eviction times of these rows were measured.
sub eviction_source_text
{
	my ($rows) = @_;
	my %src = map { ($_->{eviction_src} => 1) } grep { $_->{eviction_src} } @$rows;
	my $probe = "measured from the outside: after each run, one session runs "
	  . "max / 4 new statements (at least 200) with `track = all`, each "
	  . "timed, and reads the eviction counter after each; *one eviction* is "
	  . "the median time of a statement that evicted less the median of the "
	  . "others, and *eviction per run* that times the eviction runs of the "
	  . "benchmark run (*eviction runs*: pg_stat_statements' dealloc; "
	  . "pgss_ng's entries evicted over the entries one eviction removed in "
	  . "the probe, or its dealloc where that counts runs).";
	return "from `pgss_ng_info.eviction_time` for pgss_ng; pg_stat_statements' "
	  . $probe
	  if $src{'pgss_ng_info.eviction_time'};
	return $probe;
}

# --sizes: cold_long with and without text pressure.
sub section_text_pressure
{
	my ($data, $rows) = @_;
	my @tp = grep { ($_->{point} // '') =~ /text pressure$/ } @$rows;
	return () unless @tp;
	my ($pm) = map { $_->{max} } @tp;
	my %set = map { ($_->{name} => $_->{ng}) } @{ $data->{meta}{points} || [] };
	my $mem = sub {
		my $n = shift;
		my $ng = $set{$n} || {};
		return $ng->{'pgss_ng.query_text_memory'} // '?';
	};
	my @o;
	push @o, '### Text pressure';
	push @o, '';
	push @o, "cold_long (every statement new, each with a "
	  . fmt_num($data->{meta}{long_text_bytes} // 2000)
	  . "-byte comment: texts of about 2 kB) at max " . fmt_num($pm)
	  . ", after a fill to max: pgss_ng with `pgss_ng.query_text_memory = "
	  . $mem->('text pressure') . "` (*text pressure*: the arena holds a "
	  . "fraction of the texts) and `" . $mem->('no text pressure')
	  . "` (*no text pressure*: room for every text), pg_stat_statements "
	  . "(texts in a file) and the untracked server beside them. Columns as "
	  . "in the sizes table.";
	push @o, '';
	push @o, '| point | variant | TPS | range | vs no text pressure | vs untracked | entries | eviction runs | one eviction | eviction per run | shared memory | text memory |';
	push @o, '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	my %np = map { ($_->{variant} => $_) } grep { $_->{point} eq 'no text pressure' } @tp;
	my $none = $np{none};
	for my $s (@tp)
	{
		my $b = $np{ $s->{variant} };
		my $rel = $b && $b->{tps} && defined $s->{tps} ? fmt_ratio($s->{tps} / $b->{tps}) : '-';
		my $range = @{ $s->{tps_all} } > 1
		  ? fmt_num($s->{tps_min}) . ' – ' . fmt_num($s->{tps_max}) : '-';
		my $vsn = $none && $none->{tps} && defined $s->{tps} ? fmt_ratio($s->{tps} / $none->{tps}) : '-';
		push @o, '| ' . join(' | ', $s->{point}, $VNAME{ $s->{variant} },
			fmt_num($s->{tps}), $range, $rel, $vsn, fmt_num($s->{entries}),
			fmt_num($s->{eviction_runs}),
			defined $s->{eviction_one_ms} ? fmt_num($s->{eviction_one_ms}, 2) . ' ms' : '-',
			defined $s->{eviction_s} ? fmt_num($s->{eviction_s}, 3) . ' s' : '-',
			fmt_bytes($s->{shmem_bytes}), fmt_bytes($s->{qtext_bytes})) . ' |';
	}
	return @o;
}

# --backend-cpu: CPU per transaction of the pgbench backends.
sub section_backend_cpu
{
	my ($data, $rows) = @_;
	my @bc = grep { defined $_->{cpu_us} } @$rows;
	return () unless @bc;
	my @o;
	push @o, '### Backend CPU per transaction';
	push @o, '';
	push @o, "The pgbench backends' CPU time (`/proc/PID/schedstat`) from a "
	  . "second after the start of each run to 0.7 s before its end, over the "
	  . "transactions that pgbench's log says ended in that window, in µs: "
	  . "median and range over the rounds. *extra*: the variant's value less "
	  . "the untracked server's of the same round (median of the rounds); "
	  . "steadier than TPS on a shared machine, as it counts only the "
	  . "backends' own CPU time.";
	push @o, '';
	push @o, '| workload | clients | variant | µs per transaction | range | extra over untracked | per round | pgss_ng extra / pg_stat_statements extra |';
	push @o, '| --- | ---: | --- | ---: | --- | ---: | --- | ---: |';
	my %by;
	$by{ wl_label($_) }{ $_->{clients} }{ $_->{variant} } = $_ for @bc;
	for my $s (@bc)
	{
		my $b = $by{ wl_label($s) }{ $s->{clients} };
		my $ratio = '';
		if ($s->{variant} eq 'pgss_ng' && $b->{pgss} && defined $b->{pgss}{cpu_extra}
			&& $b->{pgss}{cpu_extra} > 0 && defined $s->{cpu_extra})
		{
			$ratio = fmt_ratio($s->{cpu_extra} / $b->{pgss}{cpu_extra});
		}
		push @o, '| ' . join(' | ', wl_label($s), $s->{clients},
			$VNAME{ $s->{variant} }, fmt_num($s->{cpu_us}, 1),
			fmt_num($s->{cpu_us_min}, 1) . ' – ' . fmt_num($s->{cpu_us_max}, 1),
			$s->{variant} eq 'none' ? '' : (defined $s->{cpu_extra} ? sprintf('%+.1f', $s->{cpu_extra}) : '-'),
			$s->{variant} eq 'none' ? '' : join(', ', map { sprintf('%+.1f', $_) } @{ $s->{cpu_extra_all} || [] }),
			$ratio) . ' |';
	}
	return @o;
}

# The readers' latency under hotcold_churn, against pg_stat_statements'.
sub section_view_read
{
	my ($data, $rows) = @_;
	my $m = $data->{meta};
	my @vr = grep { $_->{workload} eq 'view_read' && $_->{reader} } @$rows;
	return () unless @vr;
	my %vrb = map { $_->{variant} => $_ } @vr;
	my @o;
	push @o, '### view_read: reading the statistics while 4 clients run hotcold_churn';
	push @o, '';
	push @o, "One extra pgbench client alternates `SELECT * FROM <view>` and the "
	  . "text-free function (`pg_stat_statements(false)` / `pgss_ng(false)`); "
	  . "the table is filled to $m->{max} entries first ($m->{hot_churn} hot + "
	  . "$m->{prefill} cold shapes). Latency in ms: median over rounds of each "
	  . "round's median and 95th percentile.";
	push @o, '';
	push @o, '| variant | view median | view p95 | fn(false) median | fn(false) p95 | view vs pg_stat_statements | fn vs pg_stat_statements | reads per run | entries | churn TPS |';
	push @o, '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	for my $s (@vr)
	{
		my $rv = $s->{reader}{view} || {};
		my $rf = $s->{reader}{fn} || {};
		my $p = $vrb{pgss} && $vrb{pgss}{reader};
		my $rvv = $p && $p->{view} && $p->{view}{median} && defined $rv->{median} ? $rv->{median} / $p->{view}{median} : undef;
		my $rff = $p && $p->{fn} && $p->{fn}{median} && defined $rf->{median} ? $rf->{median} / $p->{fn}{median} : undef;
		push @o, "| $VNAME{$s->{variant}} | " . join(' | ',
			fmt_num($rv->{median}, 2), fmt_num($rv->{p95}, 2),
			fmt_num($rf->{median}, 2), fmt_num($rf->{p95}, 2),
			fmt_ratio($rvv), fmt_ratio($rff),
			fmt_num(($rv->{n} // 0) + ($rf->{n} // 0)),
			fmt_num($s->{entries}), fmt_num($s->{tps})) . ' |';
	}
	return @o;
}

# pgss_ng's full read against its incremental read.
sub section_view_read_incremental
{
	my ($data, $rows) = @_;
	my $m = $data->{meta};
	my @vi = grep { $_->{workload} eq 'view_read_incremental' && $_->{reader} } @$rows;
	return () unless @vi;
	# results written before these were in the meta data: the values then
	my $entries = $m->{inc_entries} // 4950;
	my $changed = $m->{inc_changed} // 250;
	my @o;
	push @o, '### view_read_incremental: a full read and an incremental read (pgss_ng)';
	push @o, '';
	push @o, "The table holds $entries hot shapes; one pgbench client keeps "
	  . "running $changed of them (5%), and a reader alternates "
	  . "`SELECT * FROM pgss_ng` with `SELECT * FROM pgss_ng(true, now() - "
	  . "interval '1 second')`. Latency in ms: median over rounds of each "
	  . "round's median and 95th percentile; rows: what each read returned "
	  . "in the middle of a run.";
	push @o, '';
	push @o, '| full median | full p95 | incremental median | incremental p95 | full / incremental | rows full | rows incremental | reads per run |';
	push @o, '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	for my $s (@vi)
	{
		my $rf = $s->{reader}{full} || {};
		my $ri = $s->{reader}{incremental} || {};
		my $ratio = $rf->{median} && $ri->{median} ? $rf->{median} / $ri->{median} : undef;
		push @o, '| ' . join(' | ',
			fmt_num($rf->{median}, 2), fmt_num($rf->{p95}, 2),
			fmt_num($ri->{median}, 2), fmt_num($ri->{p95}, 2),
			fmt_ratio($ratio), fmt_num($s->{full_rows}),
			fmt_num($s->{incremental_rows}),
			fmt_num(($rf->{n} // 0) + ($ri->{n} // 0))) . ' |';
	}
	return @o;
}

# pgss_ng_info: whatever numeric columns the measured build has.
sub section_pgss_ng_info
{
	my ($data, $rows) = @_;
	my @ng = grep { $_->{variant} eq 'pgss_ng' && $_->{info} && %{ $_->{info} } } @$rows;
	return () unless @ng;
	my %cols;
	$cols{$_} = 1 for map { keys %{ $_->{info} } } @ng;
	my @cols = sort { ($a eq 'dealloc' ? 0 : 1) <=> ($b eq 'dealloc' ? 0 : 1) || $a cmp $b } keys %cols;
	my @o;
	push @o, '### pgss_ng_info at the end of each run (median over rounds)';
	push @o, '';
	push @o, '| workload | clients | ' . join(' | ', @cols) . ' |';
	push @o, '| --- | ---: |' . (' ---: |' x @cols);
	for my $s (@ng)
	{
		push @o, '| ' . wl_label($s) . " | $s->{clients} | "
		  . join(' | ', map { fmt_num($s->{info}{$_}) } @cols) . ' |';
	}
	return @o;
}

# Which targets the run met (measured, not asserted).
sub section_targets
{
	my ($data, $rows) = @_;
	my @o;
	push @o, '### Targets (measured, not asserted)';
	push @o, '';
	my @ngr = grep { $_->{variant} eq 'pgss_ng' } @$rows;
	my (@short1, $n1, @short2, $n2, @short3, $n3);
	for my $s (@ngr)
	{
		my $id = "$s->{workload} c=$s->{clients}";
		if (defined $s->{vs_none})
		{
			$n1++;
			my $t = $TPS_TARGET{ $s->{workload} } // 0.97;
			push @short1, "$id " . fmt_ratio($s->{vs_none}) . " (target $t)"
			  if $s->{vs_none} < $t;
		}
		if (defined $s->{vs_pgss})
		{
			$n2++;
			push @short2, "$id " . fmt_ratio($s->{vs_pgss}) if $s->{vs_pgss} < 1.0;
		}
		if (defined $s->{hot_kept_min})
		{
			$n3++;
			push @short3, "$id " . fmt_pct($s->{hot_kept_min})
			  if $s->{hot_kept_min} < 1;
		}
	}
	my $line = sub {
		my ($what, $n, @short) = @_;
		return "- $what: not measured" unless $n;
		return "- $what: **met** ($n of $n)" unless @short;
		return "- $what: **short** in " . scalar(@short) . " of $n: " . join(', ', @short);
	};
	my $long = (grep { $_->{workload} eq 'cold_long' } @ngr) ? ', cold_long' : '';
	push @o, $line->('pgss_ng ≥ its target of untracked TPS (0.97x select_only, '
		  . "tpcb, trickle; 0.95x hotcold_churn; 0.85x cold_only$long)", $n1, @short1);
	push @o, $line->('pgss_ng ≥ pg_stat_statements TPS', $n2, @short2);
	push @o, $line->('pgss_ng keeps 100% of the hot shapes', $n3, @short3);
	my %vrb = map { $_->{variant} => $_ }
	  grep { $_->{workload} eq 'view_read' && $_->{reader} } @$rows;
	my $ngv = $vrb{pgss_ng};
	my $pv = $vrb{pgss};
	if ($ngv && $pv && $ngv->{reader} && $pv->{reader})
	{
		my @parts;
		my $all = 1;
		for my $k (qw(view fn))
		{
			my $a = $ngv->{reader}{$k} && $ngv->{reader}{$k}{median};
			my $b = $pv->{reader}{$k} && $pv->{reader}{$k}{median};
			next unless $a && $b;
			my $r = $a / $b;
			$all = 0 if $r > 0.8;
			push @parts, sprintf('%s %.2fx', $k eq 'view' ? 'view' : 'fn(false)', $r);
		}
		push @o, "- view_read latency ≤ 0.8x pg_stat_statements: "
		  . ($all ? '**met**' : '**short**') . ' (' . join(', ', @parts) . ')';
	}
	else
	{
		push @o, "- view_read latency ≤ 0.8x pg_stat_statements: not measured";
	}
	push @o, sizes_targets($rows);
	push @o, cpu_targets($rows);
	my ($vi) = grep { $_->{workload} eq 'view_read_incremental' && $_->{reader}
		  && $_->{reader}{full} && $_->{reader}{incremental} } @$rows;
	if ($vi && $vi->{reader}{full}{median} && $vi->{reader}{incremental}{median})
	{
		my $r = $vi->{reader}{full}{median} / $vi->{reader}{incremental}{median};
		push @o, sprintf("- view_read_incremental ≥ 10x faster than the full read: %s (%.2fx)",
			$r >= 10 ? '**met**' : '**short**', $r);
	}
	else
	{
		push @o, "- view_read_incremental ≥ 10x faster than the full read: not measured";
	}
	return @o;
}

# --sizes' targets: pgss_ng's cold_only TPS at the largest max within 5%
# of its TPS at the smallest; cold_long under text pressure within 10% of
# the same without (none when the run had no such points).
sub sizes_targets
{
	my ($rows) = @_;
	my @o;
	my @c = sort { $a->{max} <=> $b->{max} }
	  grep { $_->{workload} eq 'cold_only' && $_->{variant} eq 'pgss_ng'
		  && ($_->{point} // '') =~ /^max / && defined $_->{tps} } @$rows;
	if (@c >= 2)
	{
		my $r = $c[-1]{tps} / $c[0]{tps};
		my ($pl, $ps) = map {
			my $m = $_;
			(grep { $_->{workload} eq 'cold_only' && $_->{variant} eq 'pgss'
				  && ($_->{max} // -1) == $m && defined $_->{tps} } @$rows)[0]
		} ($c[-1]{max}, $c[0]{max});
		push @o, sprintf('- sizes: pgss_ng cold_only TPS at max %s within 5%% of '
			  . 'its TPS at max %s: %s (%.2fx; pg_stat_statements %s)',
			fmt_num($c[-1]{max}), fmt_num($c[0]{max}),
			$r >= 0.95 ? '**met**' : '**short**', $r,
			$pl && $ps && $ps->{tps} ? fmt_ratio($pl->{tps} / $ps->{tps}) : '-');
	}
	my ($tp) = grep { ($_->{point} // '') eq 'text pressure' && $_->{variant} eq 'pgss_ng'
		  && $_->{workload} eq 'cold_long' && defined $_->{tps} } @$rows;
	my ($np) = grep { ($_->{point} // '') eq 'no text pressure' && $_->{variant} eq 'pgss_ng'
		  && $_->{workload} eq 'cold_long' && defined $_->{tps} } @$rows;
	if ($tp && $np && $np->{tps})
	{
		my $r = $tp->{tps} / $np->{tps};
		push @o, sprintf('- text pressure: pgss_ng cold_long within 10%% of the '
			  . 'same without text pressure: %s (%.2fx)',
			$r >= 0.90 ? '**met**' : '**short**', $r);
	}
	return @o;
}

# --backend-cpu's targets: pgss_ng's extra CPU per transaction over the
# untracked server at most 0.8x pg_stat_statements' in cold_only and 1.0x
# in select_only (at one client).
sub cpu_targets
{
	my ($rows) = @_;
	my @o;
	for my $t ([ cold_only => 0.8 ], [ select_only => 1.0 ])
	{
		my ($w, $lim) = @$t;
		my %v = map { ($_->{variant} => $_) }
		  grep { $_->{workload} eq $w && $_->{clients} == 1 && !defined $_->{point}
			  && defined $_->{cpu_extra} } @$rows;
		next unless $v{pgss} && $v{pgss_ng};
		my ($a, $b) = ($v{pgss_ng}{cpu_extra}, $v{pgss}{cpu_extra});
		# pg_stat_statements' extra at or below 0 is noise: no ratio
		my $verdict = $b <= 0 ? 'undecided (pg_stat_statements\' extra is not above 0)'
		  : $a <= $lim * $b ? '**met**' : '**short**';
		push @o, sprintf('- backend CPU per transaction, %s at 1 client: pgss_ng\'s '
			  . 'extra ≤ %.1fx pg_stat_statements\': %s (%+.1f µs against %+.1f µs%s)',
			$w, $lim, $verdict, $a, $b,
			$b > 0 ? sprintf(', %.2fx', $a / $b) : '');
	}
	return @o;
}

sub section_short_runs
{
	my ($data) = @_;
	return () if $data->{meta}{mode} =~ /^(full|sizes|cpu)$/;
	return "Quick, scale and smoke runs are short: their numbers show the "
	  . "order of magnitude, not differences of a few percent. Use `--full` "
	  . "for those.";
}

sub section_chart
{
	my ($data, $rows, $png) = @_;
	return $png ? ("![TPS by variant and workload]($png)") : ();
}

# ---------------------------------------------------------------- chart

sub make_chart
{
	my ($rows, $pngpath, $title) = @_;
	my $gp = `sh -c 'command -v gnuplot' 2>/dev/null`;
	chomp $gp;
	unless ($gp)
	{
		print "gnuplot not found: no chart (apt-get install -y gnuplot-nox)\n";
		return 0;
	}
	my (%by, @labels);
	for my $s (@$rows)
	{
		my $l = wl_label($s) . " c$s->{clients}";
		push @labels, $l unless $by{$l};
		$by{$l}{ $s->{variant} } = $s;
	}
	my $tmp = tempdir('pgss_ng_chart.XXXXXX', DIR => '/tmp', CLEANUP => 1);
	my $dat = "$tmp/tps.dat";
	my $txt = "# label none pgss pgss_ng pgss/none ng/none\n";
	for my $l (@labels)
	{
		my @v = map { $by{$l}{$_} && defined $by{$l}{$_}{tps} ? sprintf('%.1f', $by{$l}{$_}{tps}) : 'NaN' } @VARIANTS;
		my @r = map { $by{$l}{$_} && defined $by{$l}{$_}{vs_none} ? sprintf('%.3f', $by{$l}{$_}{vs_none}) : 'NaN' } qw(pgss pgss_ng);
		$txt .= "\"$l\" @v @r\n";
	}
	spew($dat, $txt);
	# the ratio panel: only the workloads with an untracked run
	my $txt2 = join("\n", grep { !/ NaN NaN NaN NaN NaN$/ && !/^"[^"]*" NaN / } split /\n/, $txt) . "\n";
	spew("$tmp/ratio.dat", $txt2);
	my $dat2 = "$tmp/ratio.dat";
	my $n = @labels;
	my $ymax = 1.25;
	for my $s (@$rows)
	{
		$ymax = $s->{vs_none} * 1.12 if defined $s->{vs_none} && $s->{vs_none} * 1.12 > $ymax;
	}
	$ymax = sprintf('%.2f', $ymax);
	my $width = 300 + 110 * $n;
	$width = 900 if $width < 900;
	my $gps = <<GP;
set terminal pngcairo noenhanced size $width,900 font "sans,10"
set output '$pngpath'
set datafile missing 'NaN'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside top center horizontal
set grid ytics
set xtics rotate by -20 nomirror
set multiplot layout 2,1 title "$title"
set title "TPS (median of rounds)"
set yrange [0:*]
set format y "%.0f"
plot '$dat' using 2:xtic(1) title 'untracked' lc rgb '#888888', \\
     '' using 3 title 'pg_stat_statements' lc rgb '#d95f02', \\
     '' using 4 title 'pgss_ng' lc rgb '#1b9e77'
set title "TPS relative to untracked (pgss_ng targets: 0.97, churn 0.95, cold_only 0.85)"
set yrange [0:$ymax]
set format y "%.2f"
set arrow 1 from graph 0, first 0.97 to graph 1, first 0.97 nohead lc rgb '#cc0000' dt 2
plot '$dat2' using 5:xtic(1) title 'pg_stat_statements' lc rgb '#d95f02', \\
     '' using 6 title 'pgss_ng' lc rgb '#1b9e77', \\
     '' using (\$0 - 1.0/6):(\$5):(sprintf('%.2f', \$5)) with labels offset 0,0.7 font ",8" notitle, \\
     '' using (\$0 + 1.0/6):(\$6):(sprintf('%.2f', \$6)) with labels offset 0,0.7 font ",8" notitle
unset multiplot
GP
	spew("$tmp/chart.gp", $gps);
	my $rc = system("gnuplot '$tmp/chart.gp' >'$tmp/gnuplot.log' 2>&1");
	if ($rc != 0 || !-s $pngpath)
	{
		print STDERR "gnuplot failed:\n" . slurp("$tmp/gnuplot.log");
		return 0;
	}
	return 1;
}

