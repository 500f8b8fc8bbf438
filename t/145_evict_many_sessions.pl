# Many sessions holding pending counts of nested statements at a small max
# drop nothing, and every statement's count is exact.
#
# max = 100 (backstop: 200 allocated entries).  16 pgbench clients run
# "SELECT nest(:client_id)" 10 times each, concurrently, with
# pgss_ng.track = all: nest(c) executes 30 statements of its own (dynamic
# SQL, a column pair no other client uses), 480 distinct nested
# statements in all, each executed 10 times, so entries are evicted and
# made again all the time.  A session's nested counts stay pending until
# its top-level statement ends, holding references that keep their
# entries from eviction; were each session free to hold as many as
# max / 4 of them, 16 sessions would pin more entries than the backstop
# allows, and creations would be refused (counted in dropped).  Each
# session may pin only its share of the backstop's headroom, so:
#
# - pgss_ng_info.dropped is 0;
# - each of the 480 nested statements has exactly 10 calls: those of its
#   entry in pgss_ng plus those of its evicted incarnations in the
#   eviction log (pgss_ng.evicted_log large enough to hold every
#   eviction), so no count went to another statement, to the evicted
#   remainder unattributed, or nowhere;
# - the top-level statement has its 160 calls there too (under its
#   normalized text, or the text of the execution that made its entry
#   again after the one parse analysis made was evicted).
# The counts are exact whatever the timing; only the amount of eviction
# depends on it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $clients = 16;
my $per_client = 30;
my $runs = 10;

my $node = pgss_node(
	'many_sessions',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.evicted_log' => 20000,
	'pgss_ng.save' => 'off',
	max_connections => 40);

create_wide_table($node, 'w', 100);
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION pgss_ng;
-- client c's statement k selects a column pair of its own
CREATE FUNCTION nest(c int) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
  k int;
  n int;
  r int;
BEGIN
  FOR k IN 0 .. $per_client - 1 LOOP
    n := c * $per_client + k;
    EXECUTE format('SELECT c%s + c%s FROM w', 1 + n % 100, 1 + n / 100)
      INTO r;
  END LOOP;
  RETURN 0;
END
\$\$;
SELECT pgss_ng_reset();
});

my $script = PostgreSQL::Test::Utils::tempdir() . '/many_sessions.sql';
write_file($script, "SELECT nest(:client_id);\n");
my ($out, $err) = run_command(
	[
		'pgbench', '-n', '-c', $clients, '-j', 2, '-t', $runs,
		'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
	]);
like($out, qr{number of transactions actually processed: @{[$clients * $runs]}/},
	"$clients clients ran $runs transactions each")
  or diag "stdout:\n$out\nstderr:\n$err";
wait_for_clients_gone($node, 'the pgbench backends have flushed and exited');

my $untracked = '-c pgss_ng.track=none';
local $ENV{PGOPTIONS} = $untracked;

note('pgss_ng_info: ' . $node->safe_psql('postgres',
	q{SELECT format('dropped %s, backstop_skips %s, entries %s, '
	  || 'entries_evicted %s, dealloc %s', dropped, backstop_skips,
	  entries, entries_evicted, dealloc) FROM pgss_ng_info}));
my $info = $node->safe_psql('postgres',
	'SELECT dropped, entries_evicted > 0 FROM pgss_ng_info');
is($info, '0|t', 'nothing dropped, entries were evicted');

# calls of each nested statement: its entry's plus its evicted ones'
my $counts = $node->safe_psql(
	'postgres', q{
	WITH seen AS (
	  SELECT query, calls FROM pgss_ng
	  WHERE NOT toplevel AND query ~ '^SELECT c[0-9]+ \+ c[0-9]+ FROM w$'
	  UNION ALL
	  SELECT query, calls FROM pgss_ng_evictions
	  WHERE NOT toplevel AND query ~ '^SELECT c[0-9]+ \+ c[0-9]+ FROM w$'),
	per_stmt AS (SELECT query, sum(calls) AS calls FROM seen GROUP BY query)
	SELECT count(*), count(*) FILTER (WHERE calls = } . $runs . q{),
	       min(calls), max(calls)
	FROM per_stmt});
my $nstmts = $clients * $per_client;
is($counts, "$nstmts|$nstmts|$runs|$runs",
	"each of the $nstmts nested statements counted exactly $runs times "
	  . '(its entry plus its evicted ones)');

is( $node->safe_psql(
		'postgres', q{
	SELECT sum(calls) FROM (
	  SELECT calls FROM pgss_ng
	  WHERE toplevel AND query LIKE 'SELECT nest(%'
	  UNION ALL
	  SELECT calls FROM pgss_ng_evictions
	  WHERE toplevel AND query LIKE 'SELECT nest(%') s}),
	$clients * $runs,
	'the top-level statement counted once per transaction');

# a smart shutdown: the last query's backend, maybe not yet gone on a busy
# machine, ends without a FATAL for the log check to find
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still answers');
$node->stop('smart');
my @errors = grep { /\b(ERROR|FATAL|PANIC|TRAP):|terminated by signal/ }
  split /\n/, slurp_file($node->logfile);
is_deeply(\@errors, [], 'no ERROR, FATAL or crash in the server log');
done_testing();
