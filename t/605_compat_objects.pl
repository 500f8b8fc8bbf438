# 605_compat_objects.pl
#
# pgss_ng_compat's objects on a running server (issue 21).
#
# - pg_stat_statements_info.dealloc means what contrib's means, the number
#   of eviction runs: with pgss_ng.max = 100, 300 new statements in one
#   session evict in runs of 5 entries; the compat view shows pgss_ng_info's
#   dealloc (entries_evicted = 5 * dealloc, dealloc > 0) and stats_reset.
# - pg_dump / pg_restore of a database with pgss_ng_compat in its own
#   schema, a role granted EXECUTE on its reset and a view of the user's
#   that reads it: custom format (pg_restore --exit-on-error) and plain
#   format (psql ON_ERROR_STOP) each restore without an error into a new
#   database, with the extensions in their schemas, the same columns, the
#   grant (and PUBLIC still without EXECUTE), the user's view readable, and
#   the compat objects still serving pgss_ng's rows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;

my $node = pgss_node(
	'compat_objects',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'off');

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng_compat SCHEMA mon;
});
create_wide_table($node, 'w', 20);

# -- dealloc: eviction runs -----------------------------------------------------

# 300 distinct statements (pairs of columns of w), one session, after a reset.
my @pairs;
for my $i (1 .. 20)
{
	push @pairs, map { [ $i, $_ ] } 1 .. 20;
}
$node->safe_psql('postgres',
	"SELECT pgss_ng_reset();\n"
	  . join('', map { "SELECT c$_->[0], c$_->[1] FROM w;\n" } @pairs[ 0 .. 299 ]));
my ($dealloc, $evicted, $same) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT n.dealloc, n.entries_evicted,
       (c.dealloc, c.stats_reset) = (n.dealloc, n.stats_reset)
FROM mon.pg_stat_statements_info c, pgss_ng_info n});
cmp_ok($dealloc, '>', 0, "dealloc: eviction ran ($dealloc runs)");
is($evicted, 5 * $dealloc,
	'dealloc: each run evicted a batch of 5 (entries_evicted = 5 * dealloc)');
is($same, 't',
	'pg_stat_statements_info shows pgss_ng_info\'s dealloc and stats_reset');

# -- pg_dump and pg_restore ------------------------------------------------------

$node->safe_psql(
	'postgres', q{
CREATE DATABASE src;
CREATE ROLE regress_monitor;
CREATE ROLE regress_nobody;
});
$node->safe_psql(
	'src', q{
CREATE EXTENSION pgss_ng;
CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng_compat SCHEMA mon;
GRANT USAGE ON SCHEMA mon TO regress_monitor;
GRANT EXECUTE ON FUNCTION mon.pg_stat_statements_reset TO regress_monitor;
CREATE VIEW top_statements AS
  SELECT queryid, calls FROM mon.pg_stat_statements
  ORDER BY calls DESC LIMIT 5;
});

# what the restored database must show, as the source shows it
my $facts_sql = q{
SELECT (SELECT string_agg(e.extname || '@' || e.extnamespace::regnamespace, ' '
                          ORDER BY e.extname)
          FROM pg_extension e),
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod),
                          ', ' ORDER BY a.attnum)
          FROM pg_attribute a
         WHERE a.attrelid = 'mon.pg_stat_statements'::regclass AND a.attnum > 0),
       (SELECT string_agg(r || '=' || has_function_privilege(r, p.oid, 'EXECUTE'),
                          ' ' ORDER BY r)
          FROM pg_proc p,
               unnest(ARRAY['regress_monitor', 'regress_nobody']) r
         WHERE p.proname = 'pg_stat_statements_reset')};
my $want = $node->safe_psql('src', $facts_sql);
like($want, qr/^pgss_ng\@public pgss_ng_compat\@mon plpgsql\@pg_catalog\|/,
	'source: the extensions in their schemas');
like($want, qr/\|regress_monitor=true regress_nobody=false$/,
	'source: the reset granted to regress_monitor only');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my %dumps = (
	custom => [ '-Fc', '-f', "$tmp/src.dump" ],
	plain => [ '-Fp', '-f', "$tmp/src.sql" ]);
for my $format ('custom', 'plain')
{
	my $db = "dst_$format";
	$node->command_ok(
		[ 'pg_dump', @{ $dumps{$format} }, '-d', $node->connstr('src') ],
		"$format: pg_dump");
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	if ($format eq 'custom')
	{
		$node->command_ok(
			[
				'pg_restore', '--exit-on-error', '-d', $node->connstr($db),
				"$tmp/src.dump"
			],
			"$format: pg_restore without an error");
	}
	else
	{
		$node->command_ok(
			[
				'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
				$node->connstr($db), '-f', "$tmp/src.sql"
			],
			"$format: the script runs without an error");
	}
	is($node->safe_psql($db, $facts_sql), $want,
		"$format: same extensions, schemas, columns and grants");
	# a statement of the restored database, counted, read back through
	# the restored objects and the user's view
	$node->safe_psql($db, 'SELECT pgss_ng_reset(); SELECT 42 AS restored');
	is( $node->safe_psql(
			$db, q{
SELECT calls FROM mon.pg_stat_statements
WHERE query = 'SELECT $1 AS restored' AND dbid = (SELECT oid FROM pg_database
                                                 WHERE datname = current_database())}),
		'1',
		"$format: the compat view serves pgss_ng's rows");
	is($node->safe_psql($db, 'SELECT count(*) > 0 FROM top_statements'),
		't', "$format: the user's view that reads it works");
}

$node->stop;
done_testing();
