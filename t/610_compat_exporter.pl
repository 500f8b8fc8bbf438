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
use PgssNgCompat;
use PgssNgExporter;

my @releases = (
	{ version => 'v0.17.1', reads => 'view', flags => [] },
	{
		version => 'v0.19.1',
		reads => 'function',
		flags => ['--collector.stat_statements.include_query']
	});
my $probe_calls = 5;

my $node = start_compat_node('exporter');
my $own = own_view();
my $major = server_major($node);
$node->safe_psql('postgres', 'CREATE ROLE prom LOGIN IN ROLE pg_monitor');

# ------------------------------------------------------------ exporters
my @running;
for my $r (@releases)
{
	my $e = start_exporter($node, $r->{version}, 'prom',
		'--collector.stat_statements', @{ $r->{flags} })
	  or next;
	push @running, { %$r, %$e };
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
