# Datadog's and pgwatch's statement queries, taken from their public
# source, replayed (psql, ON_ERROR_STOP) against the compat objects of a
# server that has only pgss_ng preloaded, as each tool would send them on
# this server version, by a login role with pg_monitor as their setup
# guides create.  A probe statement, run 8 times and sleeping 10 ms each
# time (so that it passes pgwatch's "calls > 5 AND total_exec_time > 5"),
# must come back from each query with the numbers of pgss_ng's own entry.
#
# pgwatch v5.3.0 (tag v5.3.0, commit 456bafb811b10b595d032739ae7bbcab98908288,
# internal/metrics/metrics.yaml; identical in v6.0.0-beta): the metrics
# stat_statements, stat_statements_no_query_text and stat_statements_calls.
# Each has SQL per server major; pgwatch runs the key equal to the server's
# major or the closest below it (Metric.GetSQL): stat_statements and
# stat_statements_no_query_text have 14, 15 and 17 (so 15 on servers 15 and
# 16, 17 on 17 and 18: blk_read_time before 17, shared_ and local_blk_*
# from 17), stat_statements_calls only 14.  The queries are kept verbatim
# in t/fixtures/tool_queries/pgwatch-METRIC-KEY.sql.
#
# Datadog agent, postgres check (github.com/DataDog/integrations-core,
# postgres/datadog_checks/postgres/): statements_v2.py at commit
# bd0676a9e4e3837501b4f096d17f47fa961562e6 (LIGHTWEIGHT_SNAPSHOT_QUERY,
# QUERY_TEXT_FETCH, its column introspection) and the statements.py it
# imports from (the psycopg 3 version: STATEMENTS_QUERY, statements_query(),
# QUERYID_TO_CALLS_QUERY, PG_STAT_STATEMENTS_COUNT_QUERY,
# PG_STAT_STATEMENTS_DEALLOC and the column sets below; the copy read did
# not name its commit), and settings.py at commit
# 2d58465ac61a6e380a7f39e49ce1f92e5330bf73 (PG_SETTINGS_QUERY).  Datadog
# does not pick columns by server version: it reads the view's columns
# (SELECT * ... LIMIT 0) and selects those it knows that exist
# (blk_read_time before 17, shared_blk_read_time from 17; the block times
# only with track_io_timing on, which it is here).  The %s parameters are
# filled in as psycopg would (a database name, an array of queryids).
#
# Before CREATE EXTENSION pgss_ng_compat the first of them fails (what a
# DBA gets today); PGSS_NG_COMPAT_TARGET=contrib runs the whole against
# contrib's pg_stat_statements (t/lib/PgssNgCompat.pm).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgCompat;

my $probe_calls = 8;
my $node = start_compat_node('tools');
my $major = server_major($node);
my $own = own_view();
$node->safe_psql(
	'postgres', q{
CREATE ROLE datadog LOGIN IN ROLE pg_monitor;
CREATE ROLE pgwatch LOGIN IN ROLE pg_monitor;
});

# tool_query($role, $sql): run $sql verbatim as $role in database postgres
# (ON_ERROR_STOP); its rows as hashes by column name.
sub tool_query
{
	my ($role, $sql) = @_;
	my $out = $node->safe_psql(
		'postgres',
		"\\pset tuples_only off\n\\pset footer off\n"
		  . "\\pset fieldsep '\\037'\n\\pset recordsep '\\036'\n$sql",
		extra_params => [ '-U', $role ]);
	my ($head, @records) = split /\x1e/, $out, -1;
	my @cols = split /\x1f/, $head, -1;
	my @rows;
	for my $rec (@records)
	{
		my @f = split /\x1f/, $rec, -1;
		die "bad record from $role: $rec" unless @f == @cols;
		push @rows, { map { $cols[$_] => $f[$_] } 0 .. $#cols };
	}
	return (\@cols, \@rows);
}

# The rows of $rows whose column $col is $value.
sub rows_with
{
	my ($rows, $col, $value) = @_;
	return [ grep { defined $_->{$col} && $_->{$col} eq $value } @$rows ];
}

# ---------------------------------------- without the compat objects
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'SELECT queryid, calls FROM pg_stat_statements(false) WHERE queryid IS NOT NULL');
isnt($ret, 0, 'without the compat objects Datadog\'s first query fails');
like($stderr, qr/function pg_stat_statements\(boolean\) does not exist/,
	'... because pg_stat_statements(boolean) does not exist');

# ------------------------------------------------- the probe
create_compat($node, 'postgres');
my $probe_text = 'SELECT $1 AS tool_probe, pg_sleep($2)';
my $pid = $node->safe_psql('postgres',
	"SELECT pg_backend_pid();\n"
	  . join('', map { "SELECT 4711 AS tool_probe, pg_sleep(0.01);\n" } 1 .. $probe_calls));
($pid) = split /\n/, $pid;
wait_backend_gone($node, $pid, 'the probing session has flushed and left');
my ($queryid, $calls, $rows, $time3, $user) = split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT queryid, calls, rows, round(total_exec_time::numeric, 3),
       pg_get_userbyid(userid)
  FROM $own WHERE query = '$probe_text' AND toplevel});
is($calls, $probe_calls, "$own has the probe, $probe_calls calls");

# ------------------------------------------------------------- pgwatch
my %pgwatch_keys = (
	stat_statements => [ 15, 17 ],
	stat_statements_no_query_text => [ 15, 17 ],
	stat_statements_calls => [14]);
for my $metric (sort keys %pgwatch_keys)
{
	# Metric.GetSQL: the key equal to the major or the closest below
	my ($key) = sort { $b <=> $a } grep { $_ <= $major } @{ $pgwatch_keys{$metric} };
	my $file = "t/fixtures/tool_queries/pgwatch-$metric-$key.sql";
	my (undef, $res) = tool_query('pgwatch', slurp_file($file));
	if ($metric eq 'stat_statements_calls')
	{
		is(scalar @$res, 1, "pgwatch $metric ($key): one row");
		ok($res->[0]{calls} >= $probe_calls,
			"pgwatch $metric ($key): the database's calls include the probe's")
		  or diag("calls: $res->[0]{calls}");
		next;
	}
	my $hit = rows_with($res, 'tag_queryid', $queryid);
	is(scalar @$hit, 1, "pgwatch $metric ($key): the probe's row");
	is($hit->[0]{calls}, $calls, "pgwatch $metric ($key): calls equal $own\'s");
	is($hit->[0]{total_time} + 0, $time3 + 0,
		"pgwatch $metric ($key): total_time equals $own\'s, rounded");
	is($hit->[0]{tag_query}, $probe_text, "pgwatch $metric ($key): the text")
	  if $metric eq 'stat_statements';
	is($hit->[0]{users}, $user, "pgwatch $metric ($key): the user");
	ok(exists $hit->[0]{blk_read_time}, "pgwatch $metric ($key): blk_read_time read");
}

# ------------------------------------------------------------- Datadog
# own_value($sql): what $sql, a query of pgss_ng's, returns; in the contrib
# run the same with pgss_ng's names replaced by contrib's.
sub own_value
{
	my ($sql) = @_;
	$sql =~ s/pgss_ng\.max/pg_stat_statements.max/g,
	  $sql =~ s/pgss_ng_info/pg_stat_statements_info/g
	  if compat_target() eq 'contrib';
	return $node->safe_psql('postgres', $sql);
}

# settings.py's PG_SETTINGS_QUERY; statements.py reads pg_stat_statements.max
# (and track_io_timing) from the settings too.
my (undef, $settings) = tool_query('datadog',
	"SELECT name, setting FROM pg_settings WHERE name IN ('pg_stat_statements.max', 'track_activity_query_size')");
my $max = rows_with($settings, 'name', 'pg_stat_statements.max');
is(scalar @$max, 1, 'Datadog: pg_stat_statements.max is in pg_settings');
is($max->[0]{setting},
	own_value("SELECT current_setting('pgss_ng.max')"),
	'Datadog: pg_stat_statements.max is the number of entries kept');

my (undef, $count) = tool_query('datadog', 'SELECT COUNT(*) FROM pg_stat_statements(false)');
ok($count->[0]{count} >= 1, 'Datadog: PG_STAT_STATEMENTS_COUNT_QUERY counts entries');

my (undef, $dealloc) = tool_query('datadog', 'SELECT dealloc FROM pg_stat_statements_info');
is($dealloc->[0]{dealloc},
	own_value('SELECT dealloc FROM pgss_ng_info'),
	'Datadog: PG_STAT_STATEMENTS_DEALLOC is the eviction runs');

# statements_query(): STATEMENTS_QUERY with its placeholders filled in
sub statements_query
{
	my (%a) = @_;
	my $queryid_filter =
	  $a{called_queryids}
	  ? "AND queryid = ANY('{ $a{called_queryids} }'::bigint[])"
	  : '';
	return qq{
SELECT $a{cols}
  FROM $a{view} as pg_stat_statements
  LEFT JOIN pg_roles
         ON pg_stat_statements.userid = pg_roles.oid
  LEFT JOIN pg_database
         ON pg_stat_statements.dbid = pg_database.oid
  WHERE query != '<insufficient privilege>'
  AND query NOT LIKE '/* DDIGNORE */%'
  $queryid_filter
  @{[ $a{filters} // '' ]}
  @{[ $a{extra_clauses} // '' ]}
};
}

# The column introspection (both versions of the check)
my ($available) = tool_query('datadog',
	statements_query(cols => '*', view => 'pg_stat_statements', extra_clauses => 'LIMIT 0'));
my %available = map { $_ => 1 } @$available;
for my $c (qw(calls query rows queryid userid dbid datname rolname))
{
	ok($available{$c}, "Datadog: the introspection finds column $c");
}
my @timing = $major >= 17
  ? qw(shared_blk_read_time shared_blk_write_time)
  : qw(blk_read_time blk_write_time);
ok($available{$_}, "Datadog: the introspection finds column $_") for @timing;

my @metrics_columns = (
	qw(calls rows total_time total_exec_time shared_blks_hit shared_blks_read
	  shared_blks_dirtied shared_blks_written local_blks_hit local_blks_read
	  local_blks_dirtied local_blks_written temp_blks_read temp_blks_written
	  wal_records wal_fpi wal_bytes total_plan_time min_plan_time
	  max_plan_time mean_plan_time stddev_plan_time),
	qw(shared_blk_read_time shared_blk_write_time blk_read_time blk_write_time));
my @desired = (@metrics_columns, qw(datname rolname query queryid));
my @lightweight = (qw(queryid userid dbid calls datname rolname), @metrics_columns);
my %seen;
my @query_columns = sort grep { $available{$_} && !$seen{$_}++ } @desired;
%seen = ();
my @lightweight_columns = sort grep { $available{$_} && !$seen{$_}++ } @lightweight;
note('Datadog selects: ' . join(', ', @query_columns));

# statements.py: the full load, without and with dbstrict, then only the
# queryids whose calls changed (incremental_query_metrics)
my %main = (
	'all databases' => {},
	'dbstrict' => { filters => "AND pg_database.datname = 'postgres'" },
	'called queryids' => { called_queryids => $queryid });
for my $variant (sort keys %main)
{
	my (undef, $res) = tool_query('datadog',
		statements_query(
			cols => join(', ', @query_columns),
			view => 'pg_stat_statements',
			%{ $main{$variant} }));
	my $hit = rows_with($res, 'queryid', $queryid);
	is(scalar @$hit, 1, "Datadog STATEMENTS_QUERY ($variant): the probe's row");
	is($hit->[0]{calls}, $calls, "Datadog STATEMENTS_QUERY ($variant): calls");
	is($hit->[0]{rows}, $rows, "Datadog STATEMENTS_QUERY ($variant): rows");
	is($hit->[0]{query}, $probe_text, "Datadog STATEMENTS_QUERY ($variant): text");
	is("$hit->[0]{datname} $hit->[0]{rolname}", "postgres $user",
		"Datadog STATEMENTS_QUERY ($variant): database and role");
	is(scalar @$res, 1, "Datadog STATEMENTS_QUERY ($variant): only the probe")
	  if $variant eq 'called queryids';
}

# statements.py: QUERYID_TO_CALLS_QUERY on pg_stat_statements(false)
my (undef, $res) = tool_query('datadog',
	"SELECT queryid, calls\n  FROM pg_stat_statements(false)\n  WHERE queryid IS NOT NULL\n");
is(rows_with($res, 'queryid', $queryid)->[0]{calls},
	$calls, 'Datadog QUERYID_TO_CALLS_QUERY: the probe\'s calls');

# statements_v2.py: LIGHTWEIGHT_SNAPSHOT_QUERY (counters, no text), then
# QUERY_TEXT_FETCH for the changed queryids
(undef, $res) = tool_query('datadog',
	"SELECT " . join(', ', @lightweight_columns) . q{
  FROM pg_stat_statements(false) AS pg_stat_statements
  LEFT JOIN pg_roles
         ON pg_stat_statements.userid = pg_roles.oid
  LEFT JOIN pg_database
         ON pg_stat_statements.dbid = pg_database.oid
  WHERE queryid IS NOT NULL
  
});
my $hit = rows_with($res, 'queryid', $queryid);
is(scalar @$hit, 1, 'Datadog LIGHTWEIGHT_SNAPSHOT_QUERY: the probe\'s row');
is($hit->[0]{calls}, $calls, 'Datadog LIGHTWEIGHT_SNAPSHOT_QUERY: calls');
is($hit->[0]{rows}, $rows, 'Datadog LIGHTWEIGHT_SNAPSHOT_QUERY: rows');
(undef, $res) = tool_query('datadog', qq{
SELECT queryid, query
  FROM pg_stat_statements
  WHERE queryid = ANY('{$queryid}'::bigint[])
});
is(scalar @$res, 1, 'Datadog QUERY_TEXT_FETCH: one row');
is($res->[0]{query}, $probe_text, 'Datadog QUERY_TEXT_FETCH: the probe\'s text');

$node->stop;
note("server $major, target " . compat_target());
done_testing();
