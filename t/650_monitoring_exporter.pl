# What only pgss_ng measures, exported to Prometheus by the real
# postgres_exporter (v0.17.1 and v0.19.1, as t/610) with the project's
# queries file, monitoring/pgss_ng_queries.yaml (--extend.query-path), and
# the Grafana dashboard built on it, monitoring/pgss_ng_dashboard.json.
#
# A server with only pgss_ng preloaded, pgss_ng.max = 150 and
# track_planning on runs, as the superuser:
#   A  a statement 5 times (each sleeping 10 ms), before track_cpu is on:
#      percentiles, no CPU time (NULL);
#   B  a statement that fails 3 times after sleeping 10 ms: errors and
#      error time, no execution percentiles (NULL);
#   C  a CPU-bound statement 3 times, after track_cpu is turned on;
#   then 200 one-off statements, so that entries are evicted and more than
#   100 entries remain.  The exporters' role runs with pgss_ng.track = none
#   (ALTER ROLE), and so do the test's reads: nothing changes the figures
#   after the workload, so they are compared exactly.
# For each release:
#   1. the queries file loads and every query of it runs without error;
#   2. every series of the file's metrics is the result of the file's own
#      query, row by row (labels, values; a metric column is never NULL),
#      and nothing else is exported under those names;
#   3. the figures are pgss_ng's: A's, B's and C's calls, errors, times and
#      percentiles (seconds = pgss_ng_detail's milliseconds / 1000), C's CPU
#      times and A's none, B's missing execution percentiles; pgss_ng_info's
#      and pgss_ng_evicted's figures, with evictions (dealloc > 0);
#   4. the statements exported are 100 entries, none of them with less
#      time than an entry left out;
#   5. the dashboard: each PromQL expression of its panels and variables
#      parses (Prometheus' parser: t/lib/promql_names, built by
#      scripts/install-exporter.sh), and every metric it names is one this
#      scrape has, with the labels it matches on and the values it matches
#      exactly (phase="exec", quantile="0.99", ...).
use strict;
use warnings;

use Cwd qw(abs_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use CPAN::Meta::YAML;
use IPC::Run;
use PgssNgTest;
use PgssNgExporter;

my @releases = qw(v0.17.1 v0.19.1);
my $queries_file = abs_path('monitoring/pgss_ng_queries.yaml');
my $dashboard_file = abs_path('monitoring/pgss_ng_dashboard.json');
my $top = 100;    # the LIMIT of the statement queries
my $max = 150;

my $node = pgss_node(
	'monitoring',
	'pgss_ng.max' => $max,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'on',
	'pgss_ng.track_cpu' => 'off',
	'pgss_ng.save' => 'off');
untracked_psql($node, 'CREATE EXTENSION pgss_ng');
untracked_psql($node,
	"CREATE ROLE prom LOGIN IN ROLE pg_monitor;
	 ALTER ROLE prom SET pgss_ng.track = 'none';"
	  . join('', map { "CREATE TABLE w$_ (c int);" } 1 .. 200));
untracked_psql($node, 'SELECT pgss_ng_reset()');
my $user = untracked_psql($node, 'SELECT current_user');

# ------------------------------------------------------------ workload
my $probe_a = "SELECT 4711 AS monitoring_probe, pg_sleep(0.01);\n";
my $probe_b =
  "SELECT pg_sleep(0.01), 1 / (0 * random())::int AS monitoring_error;\n";
$node->psql('postgres', $probe_a x 5 . $probe_b x 3, on_error_stop => 0);
untracked_psql($node,
	"ALTER SYSTEM SET pgss_ng.track_cpu = on; SELECT pg_reload_conf()");
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok($node->poll_query_until('postgres', 'SHOW pgss_ng.track_cpu', 'on'),
		'track_cpu is on for new sessions');
}
$node->safe_psql('postgres',
	"SELECT 4712 AS monitoring_cpu, count(*) FROM generate_series(1, 200000);\n"
	  x 3);
# 200 one-off statements (one table each): evictions
$node->safe_psql('postgres', join('', map { "SELECT c FROM w$_;\n" } 1 .. 200));
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	wait_for_clients_gone($node, 'the workload has flushed and left');
}

# rows($sql): the rows of a query as hashes (NULL: undef), untracked
sub rows
{
	my ($sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	my ($out, $err) = ('', '');
	my @cmd = (
		'psql', '-X', '-A', '-q', '-v', 'ON_ERROR_STOP=1',
		'-P', 'footer=off', '-P', "null=\x{2}", '-F', "\x{1}",
		'-d', $node->connstr('postgres'), '-c', $sql);
	IPC::Run::run(\@cmd, '<', \undef, '>', \$out, '2>', \$err)
	  or die "psql failed: $err\n$sql";
	my ($head, @lines) = split /\n/, $out;
	my @cols = split /\x{1}/, $head, -1;
	return [
		map {
			my @v = split /\x{1}/, $_, -1;
			+{ map { $cols[$_] => ($v[$_] eq "\x{2}" ? undef : $v[$_]) } 0 .. $#cols }
		} @lines
	];
}

my $queries = CPAN::Meta::YAML->read($queries_file)
  or die CPAN::Meta::YAML->errstr;
$queries = $queries->[0];

# the entries of A, B and C, as pgss_ng_detail shows them; times / 1000
my %probe = (
	A => 'SELECT $1 AS monitoring_probe, pg_sleep($2)',
	B => 'SELECT pg_sleep($1), $2 / ($3 * random())::int AS monitoring_error',
	C => 'SELECT $1 AS monitoring_cpu, count(*) FROM generate_series($2, $3)');
my %quantile_column = (
	'0.5' => 'p50',
	'0.9' => 'p90',
	'0.95' => 'p95',
	'0.99' => 'p99',
	'0.999' => 'p999');
my @seconds =
  map { ("exec_time_$_", "plan_time_$_") } sort values %quantile_column;
push @seconds, qw(total_exec_time error_exec_time total_plan_time
  exec_user_time exec_system_time plan_user_time plan_system_time);
my $detail = rows(
	'SELECT query, queryid, calls, errors, plans, rows, '
	  . join(', ', map { "$_ / 1000 AS $_" } @seconds)
	  . ' FROM pgss_ng_detail WHERE query IN ('
	  . join(', ', map { "'$_'" } values %probe) . ')');
my %entry = map {
	my $q = $_;
	my ($row) = grep { $_->{query} eq $probe{$q} } @$detail;
	defined $row or BAIL_OUT("no pgss_ng entry for $probe{$q}");
	$q => $row
} keys %probe;
is($entry{A}{calls} . '/' . $entry{B}{errors} . '/' . $entry{C}{calls},
	'5/3/3', 'pgss_ng counted A 5 times, B failing 3 times, C 3 times');
ok(defined $entry{A}{exec_time_p99} && !defined $entry{A}{exec_user_time},
	'A has percentiles and no CPU time (run before track_cpu)');
ok(!defined $entry{B}{exec_time_p50} && defined $entry{B}{plan_time_p50},
	'B has no execution percentiles (no successful execution), planning ones');
ok(defined $entry{C}{exec_user_time} && defined $entry{C}{plan_user_time},
	'C has CPU times');
my ($info) = @{ rows('SELECT * FROM pgss_ng_info') };
ok($info->{dealloc} > 0 && $info->{entries_evicted} > 0,
	"entries were evicted ($info->{dealloc} runs, $info->{entries_evicted} entries)");
my $ranked = rows(
	q{SELECT queryid, total_exec_time + total_plan_time + error_exec_time AS t
	    FROM pgss_ng_detail WHERE queryid IS NOT NULL});
ok(@$ranked > $top, scalar(@$ranked) . " entries, more than the $top exported");

# ------------------------------------------------------------ exporters
my @running = map {
	start_exporter($node, $_, 'prom', "--extend.query-path=$queries_file")
	  // ()
} @releases;

# expected(): the series of the file's metrics, from its own queries:
# { "name{k=v,...}" => value }
sub series_key
{
	my ($name, %labels) = @_;
	return "$name\{"
	  . join(',', map { "$_=$labels{$_}" } sort keys %labels) . '}';
}
my %file_metrics;    # metric name => 1
my %expected;
for my $ns (sort keys %$queries)
{
	my @cols = map { %$_ } @{ $queries->{$ns}{metrics} };
	my %usage = map { %$_ } @{ $queries->{$ns}{metrics} };
	my @labels = grep { $usage{$_}{usage} eq 'LABEL' } keys %usage;
	my @values = grep { $usage{$_}{usage} ne 'LABEL' } keys %usage;
	$file_metrics{"${ns}_$_"} = 1 for @values;
	my $null = 0;
	for my $row (@{ rows($queries->{$ns}{query}) })
	{
		my %l = map { $_ => $row->{$_} // '' } @labels;
		for my $v (@values)
		{
			if (!defined $row->{$v}) { $null++; next; }
			$expected{ series_key("${ns}_$v", %l) } = $row->{$v};
		}
	}
	is($null, 0, "$ns: the query gives no NULL in a metric column");
}

# the dashboard's PromQL expressions (panels, rows' panels, variables),
# with Grafana's variables replaced: $__rate_interval by 5m, others in
# matcher values by a mark that skips their value check
my $dashboard = JSON::PP->new->decode(slurp_file($dashboard_file));
my @exprs;
my @panels = @{ $dashboard->{panels} };
while (my $p = shift @panels)
{
	push @panels, @{ $p->{panels} // [] };
	push @exprs, map { [ "panel \"$p->{title}\"", $_->{expr} ] }
	  grep { defined $_->{expr} } @{ $p->{targets} // [] };
}
for my $v (@{ $dashboard->{templating}{list} })
{
	next unless $v->{type} eq 'query';
	my $q = ref $v->{query} ? $v->{query}{query} : $v->{query};
	$q =~ /^label_values\((.*),\s*(\w+)\)$/
	  or die "variable $v->{name}: not label_values(selector, label): $q";
	push @exprs, [ "variable $v->{name}", $1 ];
	push @{ $exprs[-1] }, $2;
}
ok(@exprs >= 20, scalar(@exprs) . ' expressions in the dashboard');
my $promql = tools_dir() . '/promql_names/promql_names';
my @parsed;
if (-x $promql)
{
	my $in = join '', map {
		my $e = $_->[1];
		$e =~ s/\$__\w+/5m/g;
		$e =~ s/\$\{?\w+\}?/\x{1}VAR/g;
		"$e\n"
	} @exprs;
	my ($out, $err) = ('', '');
	IPC::Run::run([$promql], '<', \$in, '>', \$out, '2>', \$err)
	  or die "$promql failed: $err";
	@parsed = map { JSON::PP->new->decode($_) } split /\n/, $out;
	is(scalar @parsed, scalar @exprs, 'promql_names read every expression');
}
else
{
	fail('promql_names is installed');
	diag("$promql is missing: scripts/install-deps.sh builds it "
		  . '(scripts/install-exporter.sh, Go module proxy)');
}

for my $r (@running)
{
	my $v = $r->{version};
	my $m = scrape($r);
	is(metric($m, 'pg_exporter_user_queries_load_error'),
		'0', "$v: the queries file loads");
	is(metric($m, 'pg_exporter_last_scrape_error'),
		'0', "$v: the scrape had no error");
	my $log = slurp_file($r->{log});
	unlike($log, qr/error (finding|querying) namespace/,
		"$v: every query of the file ran");

	# 2. the exported series are the queries' rows
	my %got = map { series_key($_->{name}, %{ $_->{labels} }) => $_->{value} }
	  map {
		my %l = %{ $_->{labels} };
		delete $l{server};
		+{ %$_, labels => \%l }
	  } grep { $file_metrics{ $_->{name} } } @$m;
	is_deeply([ sort keys %got ], [ sort keys %expected ],
		"$v: the series of the file's metrics are its queries' rows ("
		  . scalar(keys %expected) . ')');
	my @differ = grep { defined $got{$_} && $got{$_} != $expected{$_} } sort keys %expected;
	is_deeply(\@differ, [], "$v: with the queries' values");

	# 3. pgss_ng's figures
	for my $q (sort keys %entry)
	{
		my $e = $entry{$q};
		my %key = (datname => 'postgres', user => $user,
			queryid => $e->{queryid}, toplevel => 'true');
		my %want = (
			calls_total => $e->{calls},
			errors_total => $e->{errors},
			rows_total => $e->{rows},
			plans_total => $e->{plans},
			exec_seconds_total => $e->{total_exec_time},
			error_exec_seconds_total => $e->{error_exec_time},
			plan_seconds_total => $e->{total_plan_time});
		for my $c (sort keys %want)
		{
			my $got = metric($m, "pgss_ng_statement_$c", %key);
			ok(defined $got && $got == $want{$c}, "$v: $q: $c is pgss_ng's")
			  or diag("exporter: " . ($got // 'none') . ", pgss_ng: $want{$c}");
		}
		for my $phase (qw(exec plan))
		{
			for my $p (sort keys %quantile_column)
			{
				my $col = "${phase}_time_$quantile_column{$p}";
				my $got = metric($m, 'pgss_ng_statement_time_seconds', %key,
					phase => $phase, quantile => $p);
				my $want = $e->{$col};
				ok((defined $got ? defined $want && $got == $want : !defined $want),
					"$v: $q: $phase quantile $p is $col / 1000"
					  . (defined $want ? '' : ' (NULL: no series)'))
				  or diag("exporter: " . ($got // 'none') . ", pgss_ng: " . ($want // 'NULL'));
			}
			for my $mode (qw(user system))
			{
				my $got = metric($m, 'pgss_ng_statement_cpu_seconds_total', %key,
					phase => $phase, mode => $mode);
				my $want = $e->{"${phase}_${mode}_time"};
				ok((defined $got ? defined $want && $got == $want : !defined $want),
					"$v: $q: $phase $mode CPU is ${phase}_${mode}_time / 1000"
					  . (defined $want ? '' : ' (NULL: no series)'))
				  or diag("exporter: " . ($got // 'none') . ", pgss_ng: " . ($want // 'NULL'));
			}
		}
	}
	my %info_want = (
		pgss_ng_info_dealloc_total => $info->{dealloc},
		pgss_ng_info_entries_evicted_total => $info->{entries_evicted},
		pgss_ng_info_eviction_seconds_total => $info->{eviction_time} / 1000,
		pgss_ng_info_dropped_total => $info->{dropped},
		pgss_ng_info_backstop_skips_total => $info->{backstop_skips},
		pgss_ng_info_entries => $info->{entries},
		pgss_ng_info_entries_allocated => $info->{entries_allocated},
		pgss_ng_info_entries_max => $max,
		pgss_ng_qtext_bytes => $info->{qtext_bytes},
		pgss_ng_qtext_limit_bytes => $info->{qtext_limit_bytes},
		pgss_ng_qtext_count => $info->{qtext_count},
		pgss_ng_qtext_dropped_total => $info->{qtext_dropped});
	for my $name (sort keys %info_want)
	{
		my $got = metric($m, $name);
		ok(defined $got && abs($got - $info_want{$name}) <= 1e-9 * abs($info_want{$name}),
			"$v: $name is pgss_ng_info's")
		  or diag("exporter: " . ($got // 'none') . ", pgss_ng_info: $info_want{$name}");
	}
	my ($evicted) = @{ rows(
		q{SELECT sum(entries) AS entries, sum(calls) AS calls FROM pgss_ng_evicted}) };
	my %evicted_got;
	for my $s (@$m)
	{
		$evicted_got{$1} += $s->{value}
		  if $s->{name} =~ /^pgss_ng_evicted_(entries|calls)_total$/;
	}
	is(($evicted_got{entries} // 'none') . '/' . ($evicted_got{calls} // 'none'),
		"$info->{entries_evicted}/$evicted->{calls}",
		"$v: pgss_ng_evicted: the entries evicted and their calls");

	# 4. the top statements
	my %exported = map { $_->{labels}{queryid} => 1 }
	  grep { $_->{name} eq 'pgss_ng_statement_calls_total' } @$m;
	is(scalar(keys %exported), $top, "$v: $top statements are exported");
	my ($least_in) = sort { $a <=> $b } map { $_->{t} } grep { $exported{ $_->{queryid} } } @$ranked;
	my ($most_out) = sort { $b <=> $a } map { $_->{t} } grep { !$exported{ $_->{queryid} } } @$ranked;
	ok($least_in >= $most_out,
		"$v: none of them has less time than one left out ($least_in ms >= $most_out ms)");

	# 5. the dashboard
	my %names;
	push @{ $names{ $_->{name} } }, $_->{labels} for @$m;
	my @bad;
	for my $i (0 .. $#parsed)
	{
		my ($where, $expr) = @{ $exprs[$i] };
		my $p = $parsed[$i];
		if ($p->{error})
		{
			push @bad, "$where: $expr: $p->{error}";
			next;
		}
		push @bad, "$where: no metric" unless @{ $p->{selectors} };
		for my $s (@{ $p->{selectors} })
		{
			my $series = $names{ $s->{metric} };
			if (!$series)
			{
				push @bad, "$where: \"$s->{metric}\" is not in the scrape";
				next;
			}
			for my $mt (@{ $s->{matchers} })
			{
				# instance and job: Prometheus' own target labels
				next if $mt->{label} =~ /^(instance|job)$/;
				push @bad, "$where: $s->{metric} has no label $mt->{label}"
				  unless grep { exists $_->{ $mt->{label} } } @$series;
				next if $mt->{type} ne '=' || $mt->{value} =~ /\x{1}VAR/;
				push @bad, "$where: no $s->{metric}\{$mt->{label}=\"$mt->{value}\"}"
				  unless grep { ($_->{ $mt->{label} } // '') eq $mt->{value} } @$series;
			}
		}
		if (defined $exprs[$i][2])    # label_values(selector, LABEL)
		{
			my $l = $exprs[$i][2];
			next if $l =~ /^(instance|job)$/;
			push @bad, "$where: no label $l"
			  unless grep { exists $_->{$l} } map { @{ $names{ $_->{metric} } // [] } } @{ $p->{selectors} };
		}
	}
	is_deeply(\@bad, [], "$v: every metric and label the dashboard uses is in the scrape")
	  if @parsed;
}

note("$_->{version} log:\n" . slurp_file($_->{log})) for @running;
$node->stop;
done_testing();
