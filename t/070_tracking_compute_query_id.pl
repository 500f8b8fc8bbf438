# compute_query_id and what pgss_ng records.
#
# pgss_ng calls EnableQueryId() in _PG_init, at the postmaster's start,
# which sets the server's query_id_enabled only if compute_query_id is not
# off at that moment; IsQueryIdEnabled() then says off: never, on:
# always, auto and regress: if query_id_enabled.  pgss_ng records only
# statements with a query identifier, so (the same on 15 to 18):
#
# - Server started with the default (auto): a session that sets
#   compute_query_id = off records nothing after that SET (analyzed at
#   auto, the SET itself is recorded; no other entry, nothing dropped)
#   for a top-level SELECT and INSERT, a utility statement, a
#   failing statement, nested statements of a DO block and of a function
#   (track = all), with track_planning on; EXPLAIN VERBOSE shows no
#   "Query Identifier", so the server computed none.  Back at auto, and
#   at regress, the same session's statements are recorded again.
# - Server started with compute_query_id = off: nothing is recorded, and
#   a session that sets auto (or regress) still records nothing (EXPLAIN
#   VERBOSE: no identifier): EnableQueryId() found off at start.  Only
#   on computes identifiers then, and the statements are recorded.
#
# Reads run untracked (pgss_ng.track = none).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

# Statements of every kind, in one session whose compute_query_id is
# $cqi; returns what EXPLAIN VERBOSE said about the identifier.
sub run_all
{
	my ($node, $cqi) = @_;
	my ($out, $err) = ('', '');
	$node->psql(
		'postgres', qq{
SET compute_query_id = $cqi;
SET pgss_ng.track = 'all';
SET pgss_ng.track_planning = on;
SELECT count(*) FROM t WHERE x > 0;
INSERT INTO t VALUES (1);
CREATE TABLE u (y int);
DROP TABLE u;
SELECT 1 / 0 AS boom;
DO \$\$BEGIN PERFORM count(*) FROM t; PERFORM max(x) FROM t; END\$\$;
SELECT f();
SELECT CASE WHEN plan ~ 'Query Identifier' THEN 'identifier' ELSE 'none' END
FROM (SELECT string_agg(p, ' ') AS plan FROM do_explain() p) s;
},
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 0);
	like($err, qr/division by zero/, "$cqi: the failing statement failed");
	my @lines = split /\n/, $out;
	return $lines[-1];
}

sub quiet
{
	my ($node, $sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql);
}

sub setup
{
	my ($node) = @_;
	quiet(
		$node, q{
CREATE EXTENSION pgss_ng;
CREATE TABLE t (x int);
CREATE FUNCTION f() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN RETURN (SELECT count(*) FROM t WHERE x < 5); END$$;
CREATE FUNCTION do_explain() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXPLAIN (VERBOSE, COSTS OFF) SELECT x FROM t; END$$;
SELECT pgss_ng_reset();
});
	return;
}

# entries in the view, entries and dropped in pgss_ng_info
sub recorded
{
	my ($node) = @_;
	return quiet($node,
		'SELECT (SELECT count(*) FROM pgss_ng), entries, dropped FROM pgss_ng_info');
}

# ------------------------------------------------ started with auto
{
	my $node = pgss_node('cqi_auto', 'pgss_ng.save' => 'off');
	setup($node);
	is(quiet($node, 'SHOW compute_query_id'), 'auto', 'auto: the default');

	is(run_all($node, 'off'), 'none',
		'auto, session off: the server computes no identifier');
	# the SET itself was analyzed while the session was still at auto
	is( quiet(
			$node, q{SELECT string_agg((query LIKE 'SET compute_query_id = %') || ' ' || calls, ', ')
					 FROM pgss_ng}),
		'true 1',
		'auto, session off: only the SET that turned it off is recorded');
	is(quiet($node, 'SELECT entries, dropped FROM pgss_ng_info'), '1|0',
		'auto, session off: no other entry, nothing dropped');

	is(run_all($node, 'auto'), 'identifier',
		'auto, session auto: the server computes identifiers');
	my ($rows) = split /\|/, recorded($node);
	cmp_ok($rows, '>=', 8, "auto, session auto: statements recorded ($rows)");
	is( quiet(
			$node, q{SELECT calls || ' ' || errors FROM pgss_ng
					 WHERE query = 'SELECT count(*) FROM t WHERE x > $1'}),
		'1 0',
		'auto, session auto: the SELECT counted once');

	quiet($node, 'SELECT pgss_ng_reset()');
	is(run_all($node, 'regress'), 'none',
		'auto, session regress: EXPLAIN hides the identifier (regress)');
	($rows) = split /\|/, recorded($node);
	cmp_ok($rows, '>=', 8,
		"auto, session regress: identifiers computed, statements recorded ($rows)");
	$node->stop;
}

# ------------------------------------------------ started with off
{
	my $node = pgss_node(
		'cqi_off',
		compute_query_id => 'off',
		'pgss_ng.save' => 'off');
	setup($node);
	is(quiet($node, 'SHOW compute_query_id'), 'off', 'off: set at start');

	is(run_all($node, 'off'), 'none', 'off: no identifier');
	is(recorded($node), '0|0|0', 'off: nothing recorded');
	is(run_all($node, 'auto'), 'none',
		'off at start, session auto: still no identifier');
	is(recorded($node), '0|0|0', 'off at start, session auto: nothing recorded');
	is(run_all($node, 'regress'), 'none',
		'off at start, session regress: no identifier');
	is(recorded($node), '0|0|0',
		'off at start, session regress: nothing recorded');

	is(run_all($node, 'on'), 'identifier',
		'off at start, session on: identifiers computed');
	my ($rows, $entries, $dropped) = split /\|/, recorded($node);
	cmp_ok($rows, '>=', 8, "off at start, session on: statements recorded ($rows)");
	is($dropped, 0, 'off at start, session on: nothing dropped');
	$node->stop;
}

done_testing();
