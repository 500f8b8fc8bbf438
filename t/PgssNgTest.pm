# t/PgssNgTest.pm
#	Helpers shared by pgss_ng's TAP tests (found through "-I t", see the
#	Makefile's check-tap target).
package PgssNgTest;

use strict;
use warnings;

use Exporter 'import';
use Test::More;

our @EXPORT = qw(create_wide_table wait_for_clients_gone);

# create_wide_table($node, $table, $ncols)
#	An empty table $table with integer columns c1 .. c$ncols: statements
#	selecting different columns of it have different queryids, which is how
#	the tests make many distinct statement shapes (constants would be
#	normalized away).
sub create_wide_table
{
	my ($node, $table, $ncols) = @_;
	$node->safe_psql(
		'postgres', qq{
SELECT format('CREATE TABLE $table (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, $ncols) i \\gexec
});
	return;
}

# wait_for_clients_gone($node, $what)
#	Pass once no client backend but the polling one is left: a backend
#	leaves pg_stat_activity after its exit flush, so everything it counted
#	is then in the shared entries.  The poll runs with the caller's
#	environment (PGOPTIONS decides whether it is itself tracked).
sub wait_for_clients_gone
{
	my ($node, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			q{SELECT count(*) FROM pg_stat_activity
			  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()},
			'0'),
		$what);
	return;
}

1;
