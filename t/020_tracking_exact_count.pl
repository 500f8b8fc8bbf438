# Exact call counts under concurrency.
#
# Eight pgbench clients (-c 8 -j 2 -T 20, extended protocol with prepared
# statements) run a custom script of four statements, each in its own
# autocommit transaction, against a server with pg_stat_statements and
# pgss_ng both preloaded.  pgbench only stops a client at a script boundary,
# so every statement ran exactly once per processed script; the table side
# effects (one history row and one abalance increment per script) confirm
# that number independently.  Once every pgbench backend has exited (so its
# exit flush is done), pgss_ng must show, for each statement, exactly that
# many calls and rows, the same calls, rows and text as pg_stat_statements,
# and no dropped or deallocated entries: no count was lost or doubled by the
# pending/flush layer under lock contention.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'exact_count',
	shared_preload_libraries => 'pg_stat_statements,pgss_ng',
	'pg_stat_statements.track' => 'top',
	'pgss_ng.track' => 'top',
	'pg_stat_statements.track_utility' => 'on',
	'pgss_ng.track_utility' => 'on',
	'pg_stat_statements.track_planning' => 'off',
	'pgss_ng.track_planning' => 'off',
	max_connections => 30);

$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');

my @conn = ('-h', $node->host, '-p', $node->port);

my ($out, $err);
my $ok = IPC::Run::run([ 'pgbench', @conn, '-i', '-s', '1', 'postgres' ],
	'>', \$out, '2>', \$err);
ok($ok, 'pgbench -i -s 1') or diag($err);

# Start counting from zero (the initialization statements are not compared,
# but a clean slate makes the entry list easy to read in failure output).
$node->safe_psql('postgres',
	'SELECT pg_stat_statements_reset(); SELECT pgss_ng_reset();');

# The script: a point SELECT, two UPDATEs (one on a hot 10-row table, so
# clients wait on each other's row locks) and an INSERT.  No explicit
# transaction block: each statement commits on its own, so the tables count
# the executions of the writing statements.
my $script = PostgreSQL::Test::Utils::tempdir() . '/exact_count.sql';
PostgreSQL::Test::Utils::append_to_file(
	$script, q{\set aid random(1, 100000)
\set tid random(1, 10)
\set delta random(1, 1000)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, 1, :aid, :delta, CURRENT_TIMESTAMP);
});

$ok = IPC::Run::run(
	[
		'pgbench', @conn,
		'-n', '-c', '8', '-j', '2', '-T', '20',
		'-M', 'prepared', '-r', '--failures-detailed',
		'-f', $script, 'postgres'
	],
	'>', \$out, '2>', \$err);
ok($ok, 'pgbench run exits with status 0 (no client aborted)')
  or diag("stdout:\n$out\nstderr:\n$err");
note($out);

my ($nxacts) = $out =~ /^number of transactions actually processed: (\d+)$/m;
my ($nfailed) = $out =~ /^number of failed transactions: (\d+) /m;
ok(defined $nxacts && $nxacts > 0, 'pgbench processed transactions')
  or diag($out);
is($nfailed, '0', 'pgbench reports no failed transaction');
like($out, qr/^number of serialization failures: 0 /m,
	'no serialization failure');
like($out, qr/^number of deadlock failures: 0 /m, 'no deadlock failure');
$nxacts //= -1;

# Wait for every other client backend to be gone: a backend leaves
# pg_stat_activity after its before_shmem_exit flush has run.
wait_for_clients_gone($node, 'all pgbench backends have exited');

# Independent count of the executions of the writing statements.
is( $node->safe_psql(
		'postgres',
		q{SELECT (SELECT count(*) FROM pgbench_history) || ' ' ||
				 (SELECT sum(abalance) FROM pgbench_accounts) || ' ' ||
				 ((SELECT sum(tbalance) FROM pgbench_tellers) =
				  (SELECT sum(delta) FROM pgbench_history))}),
	"$nxacts $nxacts true",
	'history rows and abalance increments equal the processed scripts');

# The four statements as both extensions normalize them, with their exact
# expected calls and rows.
my @expected = (
	[ 'SELECT abalance FROM pgbench_accounts WHERE aid = $1', $nxacts ],
	[
		'UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1',
		$nxacts
	],
	[ 'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2',
		$nxacts ],
	[
		'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $4, $2, $3, CURRENT_TIMESTAMP)',
		$nxacts
	],);

foreach my $e (@expected)
{
	my ($text, $n) = @$e;
	my $qtext = $text =~ s/'/''/gr;

	# pgss_ng: one top-level entry with that text, calls and rows exact
	# (every statement of the script touches exactly one row).
	is( $node->safe_psql(
			'postgres', qq{
			SELECT count(*) || ' ' || coalesce(sum(calls), -1) || ' ' ||
				   coalesce(sum(rows), -1)
			FROM pgss_ng
			WHERE query = '$qtext' AND toplevel
			  AND dbid = (SELECT oid FROM pg_database
						  WHERE datname = 'postgres')}),
		"1 $n $n",
		"pgss_ng: exact calls and rows of: $text");

	# Same key, calls, rows and text as pg_stat_statements.
	is( $node->safe_psql(
			'postgres', qq{
			SELECT count(*) FROM pgss_ng n
			JOIN pg_stat_statements p
			  USING (userid, dbid, queryid, toplevel)
			WHERE n.query = '$qtext'
			  AND p.query = n.query
			  AND p.calls = n.calls
			  AND p.rows = n.rows}),
		'1',
		"pgss_ng agrees with pg_stat_statements on: $text");
}

is( $node->safe_psql(
		'postgres', 'SELECT dropped || \' \' || dealloc FROM pgss_ng_info'),
	'0 0',
	'pgss_ng_info: nothing dropped or deallocated');

# On failure, show both views side by side.
if (!Test::More->builder->is_passing)
{
	diag(
		$node->safe_psql(
			'postgres', q{
			SELECT n.calls AS ng_calls, p.calls AS pgss_calls,
				   n.rows AS ng_rows, p.rows AS pgss_rows,
				   coalesce(n.query, p.query)
			FROM pgss_ng n FULL JOIN pg_stat_statements p
			  USING (userid, dbid, queryid, toplevel)
			ORDER BY 5}));
}

$node->stop;
done_testing();
