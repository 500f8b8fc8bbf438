# 710_ext_old_sql.pl
#
# The library with the SQL objects of an older extension version: a
# database where pgss_ng and pgss_ng_compat are still at their oldest
# version (old_sql) reads through every one of its views and functions
# exactly what a database with the newest version (new_sql) reads through
# the same columns, and its resets work; the library fills the columns the
# calling SQL declares.
#
# Set-up: pgss_ng.max = 100 and 300 distinct statements, so that the
# evicted remainder and the eviction log have rows, then a few statements
# run several times; the reads themselves are not tracked, so every read
# sees the same entries.  Compared, as text: each view of the old version
# (its columns, in the newest version's view of the same name), pgss_ng()
# and pgss_ng_detail() without texts and since a time, the time
# histograms of one entry, pg_stat_statements (with and without texts)
# and pg_stat_statements_info.  Every function of the old version is
# called.  Its pgss_ng_reset() and pg_stat_statements_reset() remove the
# entry of the queryid they are given.
#
# Declarations that do not match the library, for each of its functions
# that returns rows (pgss_ng's and pgss_ng_compat's): with a column appended
# that it does not make, or the first column of another type, the call
# fails with an ERROR that names the column (and, for a function of an
# extension, the ALTER EXTENSION ... UPDATE to run), and no row is read
# past what the library fills; with only the first two columns, the rows
# are those of the full function; pgss_ng() declared with pgss_ng_detail's
# columns (as an earlier build of 1.0 declared it) returns pgss_ng_detail's
# rows.  The server never crashes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;
use PgssNgExt;

my $node = pgss_node(
	'ext_old_sql',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_planning' => 'on',
	# no wait samples: rows read twice stay the same
	'pgss_ng.wait_sample_period' => 0,
	'pgss_ng.save' => 'off');

my %oldest = map { $_ => (ext_versions($node, $_))[0] } qw(pgss_ng pgss_ng_compat);

untracked_psql(
	$node, qq{
CREATE DATABASE old_sql;
CREATE DATABASE new_sql;
CREATE DATABASE bad_sql;
});
$node->safe_psql(
	'old_sql', qq{
SET pgss_ng.track = none;
CREATE EXTENSION pgss_ng VERSION '$oldest{pgss_ng}';
CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng_compat SCHEMA mon VERSION '$oldest{pgss_ng_compat}';
});
for my $db (qw(new_sql bad_sql))
{
	$node->safe_psql(
		$db, q{
SET pgss_ng.track = none;
CREATE EXTENSION pgss_ng;
CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng_compat SCHEMA mon;
});
}

# The workload: 300 distinct statements (evictions), then three run 3 times.
create_wide_table($node, 'w', 20);
my @pairs;
for my $i (1 .. 20)
{
	push @pairs, map { [ $i, $_ ] } 1 .. 15;
}
$node->safe_psql('postgres',
	join('', map { "SELECT c$_->[0], c$_->[1] FROM w;\n" } @pairs));
$node->safe_psql('postgres',
	"SELECT c1 FROM w WHERE c2 = 1;\nSELECT c3 FROM w WHERE c4 = 2;\nSELECT c5 FROM w WHERE c6 = 3;\n"
	  x 3);

# Run $sql untracked in $db.
sub read_db
{
	my ($db, $sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql($db, $sql);
}

my @old_views = ext_views($node, 'old_sql', qw(pgss_ng pgss_ng_compat));
ok(scalar(@old_views) >= 7, 'the oldest version has views (' . join(', ', @old_views) . ')');
for my $view (@old_views)
{
	my ($schema, $name) = split /\./, $view;
	($schema, $name) = ('public', $schema) unless defined $name;
	my $cols = read_db('old_sql', qq{
SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
FROM pg_attribute WHERE attrelid = '$view'::regclass AND attnum > 0});
	my $sql = "SELECT $cols FROM $view ORDER BY $cols";
	my $old = read_db('old_sql', $sql);
	isnt($old, '', "$view of the oldest version has rows");
	is($old, read_db('new_sql', $sql),
		"$view of the oldest version: the rows of the newest's");
}

my $marker = read_db('new_sql',
	"SELECT format('%s, %s', queryid, userid) FROM pgss_ng WHERE query LIKE 'SELECT c1 FROM w WHERE c2%'"
);
my ($marker_qid, $me) = split /, /, $marker;
my $since = read_db('new_sql',
	"SELECT min(stats_since) FROM pgss_ng WHERE query LIKE 'SELECT c5 FROM w WHERE c6%'");
for my $sql (
	'SELECT * FROM pgss_ng(false) ORDER BY queryid',
	"SELECT * FROM pgss_ng(true, '$since') ORDER BY queryid",
	'SELECT * FROM pgss_ng_detail(false, NULL) ORDER BY queryid',
	"SELECT * FROM pgss_ng_exec_time_histogram($me, (SELECT oid FROM pg_database WHERE datname = 'postgres'), $marker_qid, true)",
	"SELECT * FROM pgss_ng_plan_time_histogram($me, (SELECT oid FROM pg_database WHERE datname = 'postgres'), $marker_qid, true)",
	'SELECT * FROM mon.pg_stat_statements(false) ORDER BY queryid',
	'SELECT * FROM mon.pg_stat_statements_info()')
{
	# the columns the oldest version declares (a newer one may append)
	my ($fn) = $sql =~ /FROM ([\w.]+)\(/;
	my $cols = read_db('old_sql', qq{
SELECT string_agg(quote_ident(n), ', ' ORDER BY o)
FROM pg_proc p, unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(n, m, o)
WHERE p.oid = '$fn'::regproc AND m IN ('o', 't')});
	(my $old_sql = $sql) =~ s/^SELECT \*/SELECT $cols/;
	my $old = read_db('old_sql', $old_sql);
	isnt($old, '', "oldest version: $sql has rows");
	is($old, read_db('new_sql', $old_sql),
		"oldest version: $sql as the newest (its columns)");
}

# Every function of the oldest version is called (the resets last).
my @old_functions = ext_functions($node, 'old_sql', qw(pgss_ng pgss_ng_compat));
for my $f (sort { ($a->{name} =~ /reset/) <=> ($b->{name} =~ /reset/) }
	@old_functions)
{
	my $sql = call_sql($f);
	my ($rc, $out, $err) = $node->psql('old_sql', $sql);
	is($rc, 0, "oldest version: $sql works") or diag($err);
}

# Its resets remove the entry of the queryid they are given.
$node->safe_psql('postgres', "SELECT c1 FROM w WHERE c2 = 1;\nSELECT c3 FROM w WHERE c4 = 2;\n");
my %qid = map {
	$_ => read_db('new_sql',
		"SELECT queryid FROM pgss_ng WHERE query LIKE 'SELECT $_ FROM w WHERE%'")
} qw(c1 c3);
read_db('old_sql', "SELECT pgss_ng_reset(0, 0, $qid{c1})");
read_db('old_sql', "SELECT mon.pg_stat_statements_reset(0, 0, $qid{c3})");
is(read_db('new_sql',
		"SELECT count(*) FROM pgss_ng WHERE queryid IN ($qid{c1}, $qid{c3})"),
	0, 'the oldest version\'s pgss_ng_reset and pg_stat_statements_reset each removed their entry');

# -- declarations that do not match the library ----------------------------------

my @functions = grep { @{ $_->{out} } && $_->{language} eq 'c' }
  ext_functions($node, 'bad_sql', qw(pgss_ng pgss_ng_compat));
ok(scalar(@functions) >= 8,
	'functions returning rows: ' . join(', ', map { $_->{name} } @functions));
my $n = 0;
for my $f (@functions)
{
	my @in = @{ $f->{in} };
	my @out = @{ $f->{out} };
	my $in_decl = join('', map { "IN $_, " } @in);
	my $args = join(', ', map { typed_value($_) } @in);
	my $returns = $f->{retset} ? 'SETOF record' : 'record';
	my $declare = sub {
		my ($name, @cols) = @_;
		my $c = join(', ', map { "OUT $_->[0] $_->[1]" } @cols);
		return "CREATE FUNCTION $name($in_decl$c) RETURNS $returns "
		  . "AS '\$libdir/pgss_ng', '$f->{symbol}' LANGUAGE C;";
	};
	$n++;
	my $wrong_type = $out[0][1] eq 'text' ? 'bigint' : 'text';
	$node->safe_psql(
		'bad_sql', join("\n",
			$declare->("later_$n", @out, [ 'from_a_later_version', 'bigint' ]),
			$declare->("retyped_$n", [ $out[0][0], $wrong_type ], @out[ 1 .. $#out ]),
			$declare->("first_$n", @out[ 0 .. 1 ])));

	my ($rc, $stdout, $stderr) =
	  $node->psql('bad_sql', "SELECT * FROM later_$n($args)");
	like(
		$stderr,
		qr/ERROR:  function later_$n\(.*\) declares result column "from_a_later_version", which the library does not make\nHINT:  Declare only result columns that the library makes, with their types\./,
		"$f->{symbol} declared with a column it does not make: ERROR");
	($rc, $stdout, $stderr) =
	  $node->psql('bad_sql', "SELECT * FROM retyped_$n($args)");
	like(
		$stderr,
		qr/ERROR:  function retyped_$n\(.*\) declares result column "$out[0][0]" as type $wrong_type, but the library makes it as type $out[0][1]/,
		"$f->{symbol} declared with $out[0][0] of another type: ERROR");
	my $cols = "$out[0][0], $out[1][0]";
	is( read_db('bad_sql', "SELECT $cols FROM first_$n($args) ORDER BY 1, 2"),
		read_db('bad_sql',
			"SELECT $cols FROM $f->{schema}.$f->{name}($args) ORDER BY 1, 2"),
		"$f->{symbol} declared with its first two columns: the full function's rows");
}

# pgss_ng() declared with pgss_ng_detail's columns (as an earlier build
# declared it) reads them.
my ($detail) = grep { $_->{name} eq 'pgss_ng_detail' } @functions;
$node->safe_psql('bad_sql',
	'CREATE FUNCTION pgss_ng_wide(IN showtext boolean, IN changed_since timestamptz, '
	  . join(', ', map { "OUT $_->[0] $_->[1]" } @{ $detail->{out} })
	  . q{) RETURNS SETOF record AS '$libdir/pgss_ng', 'pgss_ng' LANGUAGE C;});
is( read_db('bad_sql', 'SELECT * FROM pgss_ng_wide(false, NULL) ORDER BY queryid'),
	read_db('bad_sql', 'SELECT * FROM pgss_ng_detail(false, NULL) ORDER BY queryid'),
	"pgss_ng() declared with pgss_ng_detail's columns: pgss_ng_detail's rows");

# A function of the extension that the library does not match: the hint
# names the extension, its version and the ALTER EXTENSION to run.
$node->safe_psql(
	'bad_sql', q{
CREATE FUNCTION pgss_ng_from_later(IN showtext boolean, IN changed_since timestamptz,
    OUT userid oid, OUT plan_id bigint)
RETURNS SETOF record AS '$libdir/pgss_ng', 'pgss_ng' LANGUAGE C;
ALTER EXTENSION pgss_ng ADD FUNCTION pgss_ng_from_later(boolean, timestamptz);
});
my $version = read_db('bad_sql',
	"SELECT extversion FROM pg_extension WHERE extname = 'pgss_ng'");
my ($rc, $stdout, $stderr) =
  $node->psql('bad_sql', 'SELECT * FROM pgss_ng_from_later(true, NULL)');
like(
	$stderr,
	qr/ERROR:  function pgss_ng_from_later\(boolean,timestamp with time zone\) declares result column "plan_id", which the library does not make\nHINT:  The SQL objects of extension "pgss_ng" \(version \Q$version\E\) do not match its library: run ALTER EXTENSION pgss_ng UPDATE, or restart the server if the library was installed after it started\./,
	'a member of the extension: the hint names ALTER EXTENSION pgss_ng UPDATE');

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');
$node->stop;
unlike(slurp_file($node->logfile),
	qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');
done_testing();
