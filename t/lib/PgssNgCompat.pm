# t/lib/PgssNgCompat.pm
#	Helpers of the 6xx tests, which check pgss_ng's pg_stat_statements
#	face (the pgss_ng_compat extension) with the real monitoring tools.
#
#	The tests run against pgss_ng: a server with only pgss_ng preloaded,
#	CREATE EXTENSION pgss_ng and pgss_ng_compat.  With the environment
#	variable PGSS_NG_COMPAT_TARGET=contrib they run the same scenario
#	against contrib's pg_stat_statements instead (preloaded alone, CREATE
#	EXTENSION pg_stat_statements): what a tool sees there is what it must
#	see from pgss_ng, so that run checks the tests themselves.
package PgssNgCompat;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use PostgreSQL::Test::Cluster;
use PgssNgTest;

our @EXPORT = qw(compat_target own_view start_compat_node create_compat
  start_contrib_node server_major wait_backend_gone);

# compat_target()
#	'pgss_ng' (the default) or 'contrib'.
sub compat_target
{
	my $t = $ENV{PGSS_NG_COMPAT_TARGET} // 'pgss_ng';
	die "PGSS_NG_COMPAT_TARGET must be pgss_ng or contrib, not \"$t\""
	  unless $t eq 'pgss_ng' || $t eq 'contrib';
	return $t;
}

# own_view()
#	The view the tools' numbers are checked against: pgss_ng's own, or
#	in the contrib run pg_stat_statements itself.
sub own_view
{
	return compat_target() eq 'pgss_ng' ? 'pgss_ng' : 'pg_stat_statements';
}

# start_compat_node($name, %gucs)
#	Create and start a node (pgss_node) with only the target's library
#	preloaded, top-level tracking with utility statements, no stats file
#	and track_io_timing on (some tools read the block times only then),
#	then %gucs.  Creates no extension.
sub start_compat_node
{
	my ($name, @gucs) = @_;
	my $p = compat_target() eq 'pgss_ng' ? 'pgss_ng' : 'pg_stat_statements';
	return pgss_node(
		$name,
		shared_preload_libraries => $p,
		"$p.track" => 'top',
		"$p.track_utility" => 'on',
		"$p.save" => 'off',
		track_io_timing => 'on',
		@gucs);
}

# create_compat($node, $db)
#	Create the pg_stat_statements objects in $db: CREATE EXTENSION pgss_ng
#	and pgss_ng_compat, or (contrib run) pg_stat_statements.
sub create_compat
{
	my ($node, $db) = @_;
	$node->safe_psql($db,
		compat_target() eq 'pgss_ng'
		? 'CREATE EXTENSION IF NOT EXISTS pgss_ng; CREATE EXTENSION pgss_ng_compat'
		: 'CREATE EXTENSION pg_stat_statements');
	return;
}

# start_contrib_node($name)
#	Create and start a second throwaway node of the same version with
#	contrib's pg_stat_statements preloaded and created in postgres: the
#	reference the compat objects are compared with.
sub start_contrib_node
{
	my ($name) = @_;
	my $node = pgss_node($name, shared_preload_libraries => 'pg_stat_statements');
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');
	return $node;
}

# server_major($node)
#	The server's major version (15, 16, ...).
sub server_major
{
	my ($node) = @_;
	return int($node->safe_psql('postgres',
			"SELECT current_setting('server_version_num')::int / 10000"));
}

# wait_backend_gone($node, $pid, $what)
#	Pass once backend $pid has left pg_stat_activity, that is after its
#	exit flush: whatever it counted is in the shared entries then.
sub wait_backend_gone
{
	my ($node, $pid, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid", '0'),
		$what);
	return;
}

1;
