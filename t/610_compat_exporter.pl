# A real postgres_exporter scrapes a server that has only pgss_ng
# preloaded, through the pg_stat_statements objects of pgss_ng_compat.
#
# Two releases of prometheus-community/postgres_exporter, built by
# scripts/install-exporter.sh from the Go module proxy (the exact module
# versions; cached in $PGSS_NG_TOOLS_DIR, default /opt/pgss_ng/tools):
#   v0.17.1  reads the pg_stat_statements view;
#   v0.19.1  reads pg_stat_statements(true/false) (the function), run here
#            with --collector.stat_statements.include_query, which adds
#            each statement's text (its first 120 characters) as a label.
# Their statements collector is off by default: it is turned on
# (--collector.stat_statements); the exporters listen on 127.0.0.1 only and
# connect through the node's Unix socket as a login role with pg_monitor,
# as a DBA sets them up.  Which query each release sends on which server
# version: collector/pg_stat_statements.go of that release (17 and later:
# shared_blk_read_time/shared_blk_write_time, before: blk_read_time and
# blk_write_time).
#
# 1. Before CREATE EXTENSION pgss_ng_compat the statements collector fails
#    (pg_scrape_collector_success 0, the server's error in the exporter's
#    log): what a DBA gets today, and the proof that the checks below
#    depend on the compat objects.
# 2. After it, a known statement run 5 times (each sleeping 50 ms: it is
#    the slowest, so neither the exporter's "above the 10th percentile of
#    total_exec_time" filter nor its LIMIT drops it) appears with calls,
#    rows and seconds equal to pgss_ng's own entry, and with v0.19.1 its
#    text equals pgss_ng's normalized text.
#
# A missing binary is a failure (scripts/install-deps.sh builds them), not
# a skip.  PGSS_NG_COMPAT_TARGET=contrib runs the same against contrib's
# pg_stat_statements (t/lib/PgssNgCompat.pm).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use HTTP::Tiny;
use PgssNgCompat;

my $tools = $ENV{PGSS_NG_TOOLS_DIR} // '/opt/pgss_ng/tools';
my @releases = (
	{ version => 'v0.17.1', reads => 'view', flags => [] },
	{
		version => 'v0.19.1',
		reads => 'function',
		flags => ['--collector.stat_statements.include_query']
	});
my $probe_calls = 5;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $node = start_compat_node('exporter');
my $own = own_view();
my $major = server_major($node);
$node->safe_psql('postgres', 'CREATE ROLE prom LOGIN IN ROLE pg_monitor');

# ------------------------------------------------------------ exporters
# A configuration file without authentication modules, so that the
# exporter reads none from its working directory.
my $config = "$tmp/postgres_exporter.yml";
open my $fh, '>', $config or die "could not write $config: $!";
print $fh "auth_modules: {}\n";
close $fh;

my @running;
for my $r (@releases)
{
	my $bin = "$tools/postgres_exporter-$r->{version}/postgres_exporter";
	if (!-x $bin)
	{
		fail("postgres_exporter $r->{version} is installed");
		diag("$bin is missing: scripts/install-deps.sh builds it "
			  . "(scripts/install-exporter.sh, Go module proxy)");
		next;
	}
	$r->{port} = PostgreSQL::Test::Cluster::get_free_port();
	$r->{log} = "$tmp/exporter-$r->{version}.log";
	local $ENV{DATA_SOURCE_NAME} =
	  'host=' . $node->host . ' port=' . $node->port
	  . ' user=prom dbname=postgres sslmode=disable';
	$r->{handle} = IPC::Run::start(
		[
			$bin, "--web.listen-address=127.0.0.1:$r->{port}",
			"--config.file=$config", '--collector.stat_statements',
			'--log.level=info', @{ $r->{flags} }
		],
		'<', \undef, '>&', $r->{log});
	push @running, $r;
}

# Stop the exporters however the test ends (a failed safe_psql dies).
END
{
	local $?;
	$_->{handle}->kill_kill for @running;
}

# scrape($r): the exporter's /metrics, parsed into a list of
# { name, labels => {...}, value }.  Waits for the exporter to listen.
# Straight to 127.0.0.1, whatever http_proxy says.
my $http = HTTP::Tiny->new(
	timeout => $PostgreSQL::Test::Utils::timeout_default,
	proxy => undef,
	http_proxy => undef);

sub scrape
{
	my ($r) = @_;
	my $url = "http://127.0.0.1:$r->{port}/metrics";
	my $res;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		$res = $http->get($url);
		last if $res->{success} || $res->{status} != 599;
		select undef, undef, undef, 0.1;
	}
	die "GET $url: $res->{status} $res->{reason}\n"
	  . slurp_file($r->{log}) unless $res->{success};
	my @metrics;
	for my $line (split /\n/, $res->{content})
	{
		next if $line =~ /^#/ || $line !~ /\S/;
		$line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(.*)$/ or die "bad line: $line";
		my ($name, $rest, %labels) = ($1, $2);
		if ($rest =~ s/^\{//)
		{
			while ($rest =~ s/^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?//)
			{
				my ($k, $v) = ($1, $2);
				$v =~ s/\\(.)/$1 eq 'n' ? "\n" : $1/ge;
				$labels{$k} = $v;
			}
			$rest =~ s/^\}// or die "bad labels: $line";
		}
		$rest =~ /^\s+(\S+)/ or die "no value: $line";
		push @metrics, { name => $name, labels => \%labels, value => $1 };
	}
	return \@metrics;
}

# The value of the metric $name whose labels include %want (undef if
# none; dies if several).
sub metric
{
	my ($metrics, $name, %want) = @_;
	my @hits = grep {
		my $m = $_;
		$m->{name} eq $name
		  && !grep { ($m->{labels}{$_} // "\0") ne $want{$_} } keys %want
	} @$metrics;
	die "several $name for " . join(',', %want) if @hits > 1;
	return @hits ? $hits[0]{value} : undef;
}

# -------------------------------------- 1. without the compat objects
my %missing = (
	view => 'relation "pg_stat_statements" does not exist',
	function => 'function pg_stat_statements(boolean) does not exist');
for my $r (@running)
{
	my $m = scrape($r);
	is(metric($m, 'pg_scrape_collector_success', collector => 'stat_statements'),
		'0', "$r->{version}: the statements collector fails without the compat objects");
	is(scalar(grep { $_->{name} =~ /^pg_stat_statements_/ } @$m),
		0, "$r->{version}: no statement metrics without the compat objects");
	# (logfmt escapes the quotes)
	my $error = join '\\\\?"', map { quotemeta } split /"/, $missing{ $r->{reads} }, -1;
	like(slurp_file($r->{log}), qr/$error/,
		"$r->{version}: the exporter logs the server's error");
}

# ------------------------------------------ 2. with the compat objects
create_compat($node, 'postgres');

my $probe = join '',
  map { "SELECT 4711 AS exporter_probe, pg_sleep(0.05);\n" } 1 .. $probe_calls;
my $pid = $node->safe_psql('postgres', "SELECT pg_backend_pid();\n$probe");
($pid) = split /\n/, $pid;
wait_backend_gone($node, $pid, 'the probing session has flushed and left');

# The probe's entry in the target's own view (pgss_ng, or contrib's view
# in the contrib run), read by the superuser.
my ($queryid, $calls, $rows, $exec_ms, $query) = split /\|/,
  $node->safe_psql(
	'postgres', qq{
SELECT queryid, calls, rows, total_exec_time, query FROM $own
WHERE query = 'SELECT \$1 AS exporter_probe, pg_sleep(\$2)' AND toplevel});
is($calls, $probe_calls, "$own counted the probe $probe_calls times");
my $user = $node->safe_psql('postgres', 'SELECT current_user');

for my $r (@running)
{
	my $v = $r->{version};
	my $m = scrape($r);
	is(metric($m, 'pg_scrape_collector_success', collector => 'stat_statements'),
		'1', "$v: the statements collector succeeds");
	my %key = (queryid => $queryid, datname => 'postgres', user => $user);
	ok(scalar(grep { $_->{name} eq 'pg_stat_statements_calls_total' } @$m) >= 2,
		"$v: statement metrics are present");
	is(metric($m, 'pg_stat_statements_calls_total', %key),
		$calls, "$v: the probe's calls equal $own\'s");
	is(metric($m, 'pg_stat_statements_rows_total', %key),
		$rows, "$v: the probe's rows equal $own\'s");
	my $seconds = metric($m, 'pg_stat_statements_seconds_total', %key);
	ok( defined $seconds && abs($seconds - $exec_ms / 1000) < 1e-6,
		"$v: the probe's seconds equal $own\'s total_exec_time / 1000")
	  or diag("exporter: " . ($seconds // 'none') . ", $own: $exec_ms ms");
	ok(defined metric($m, 'pg_stat_statements_block_read_seconds_total', %key),
		"$v: the probe's block read time is exported");
	ok(defined metric($m, 'pg_stat_statements_block_write_seconds_total', %key),
		"$v: the probe's block write time is exported");
	if ($r->{reads} eq 'function')
	{
		is(metric($m, 'pg_stat_statements_query_id', queryid => $queryid),
			'1', "$v: the probe's text is exported");
		my ($label) = map { $_->{labels}{query} }
		  grep { $_->{name} eq 'pg_stat_statements_query_id'
			  && $_->{labels}{queryid} eq $queryid } @$m;
		is($label, substr($query, 0, 120), "$v: the probe's text equals $own\'s");
	}
}

note("$_->{version} log:\n" . slurp_file($_->{log})) for @running;
$node->stop;
note("server $major, target " . compat_target());
done_testing();
