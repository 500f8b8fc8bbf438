# What an error while binding parameters counts (extended protocol):
# nothing (README, errors: "Not counted"), since the server calls no
# extension hook before it converts a Bind's parameters; an error raised
# after the Bind, while the statement is planned or executed, counts.  pg_stat_statements, loaded
# in the same server, is the reference for calls and texts.
#
# - Parse "SELECT $1::int AS bind9", Bind with 'abc' (invalid input syntax
#   for type integer), then Bind with '5' and Execute: the entry shows
#   calls 1, errors 0.
# - Parse "SELECT 10 / $1::int AS exec9", Bind with '0' and Execute
#   (division by zero, raised while its custom plan is made: the
#   planner folds 10 / 0), then with '2': calls 1, errors 1.
# - Both as pg_stat_statements shows them: the same texts, calls 1 each.
#
# The reads run untracked (pgss_ng.track and pg_stat_statements.track =
# none).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;
use PgssNgWire;

my $node = pgss_node(
	'failures_bind',
	shared_preload_libraries => 'pg_stat_statements,pgss_ng',
	'pgss_ng.track' => 'top',
	'pg_stat_statements.track' => 'top');
$node->safe_psql('postgres',
	'CREATE EXTENSION pgss_ng; CREATE EXTENSION pg_stat_statements');

my $c = PgssNgWire->connect($node, 'postgres', 'postgres');

# Bind the prepared statement $stmt to one parameter and execute it; the
# error messages.
sub run_once
{
	my ($stmt, $param) = @_;
	$c->bind('', $stmt, $param);
	$c->execute('', 0);
	$c->sync;
	return $c->results->{errors};
}

$c->parse('b9', 'SELECT $1::int AS bind9');
$c->parse('e9', 'SELECT 10 / $1::int AS exec9');
$c->sync;
is(scalar @{ $c->results->{errors} }, 0, 'both statements parsed');

my $err = run_once('b9', 'abc');
like("@$err", qr/invalid input syntax for type integer/,
	'Bind with a bad parameter fails');
is("@{ run_once('b9', '5') }", '', 'Bind with a good parameter runs');
$err = run_once('e9', '0');
like("@$err", qr/division by zero/, 'planning with 0 fails');
is("@{ run_once('e9', '2') }", '', 'execution with 2 runs');
$c->close;

my $filter = q{WHERE query LIKE '%bind9' OR query LIKE '%exec9'
	ORDER BY query COLLATE "C"};
my $untracked =
  '-c pgss_ng.track=none -c pg_stat_statements.track=none';
{
	local $ENV{PGOPTIONS} = $untracked;
	is( $node->safe_psql(
			'postgres', "SELECT query, calls, errors FROM pgss_ng $filter"),
		"SELECT \$1::int AS bind9|1|0\nSELECT \$2 / \$1::int AS exec9|1|1",
		'a Bind error is not counted; a planning error is');
	is( $node->safe_psql(
			'postgres',
			"SELECT query, calls FROM pg_stat_statements $filter"),
		"SELECT \$1::int AS bind9|1\nSELECT \$2 / \$1::int AS exec9|1",
		'pg_stat_statements shows the same texts and calls');
}

$node->stop;
done_testing();
