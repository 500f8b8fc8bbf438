# CPU time (pgss_ng.track_cpu) is the statement's own: counted only while
# the executor runs it, and with its parallel workers'.
#
# - A cursor (PL/pgSQL, track = all): OPEN; FETCH; a CPU-bound statement;
#   FETCH; CLOSE.  The cursor's statement is charged less than a tenth of
#   the CPU time the kernel counts for the backend over the function (its
#   own work is microseconds); the CPU-bound statement itself at least
#   half of it.
# - A named portal fetched in chunks at top level (extended protocol,
#   Execute with a row limit, as JDBC's fetchSize does), a CPU-bound
#   statement run between two chunks: the same bound for the portal's
#   statement.
# - A parallel query with 2 workers and parallel_leader_participation off
#   (the workers do the scan, the leader waits): its CPU time, less what
#   the kernel counts for the leader over it, is at least 0.4 x the CPU
#   time the kernel counts for the same scan run serially (the workers'
#   share: the same rows, the same md5() per row), and at most 3 x its
#   execution time (three processes) + 50 ms; calls = 1 (workers are not
#   counted as calls).  All bounds are from what the test measures
#   itself: the kernel's count (utime + stime of /proc/self/stat, clock
#   ticks of 10 ms) and the statement's own execution time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;
use PgssNgWire;

my $node = pgss_node(
	'cpu_executor',
	'pgss_ng.track' => 'top',
	'pgss_ng.track_cpu' => 'on',
	'max_worker_processes' => 8,
	'max_parallel_workers' => 8,
	autovacuum => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');

# The backend's own CPU time (ms) from /proc/self/stat (utime, stime:
# fields 14 and 15, in clock ticks of 10 ms).
my $proc_cpu = q{
SELECT (f[12]::bigint + f[13]::bigint) * 10 AS cpu_ms
FROM (SELECT string_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') AS f) s};

my $heavy = 'SELECT count(*) FROM generate_series(1, 5000000) g';

# exec CPU (user + system, ms), calls and exec time of the one entry
# whose text is LIKE a pattern
sub cpu_of
{
	my ($pattern, $toplevel) = @_;
	my $r = untracked_psql($node,
		qq{SELECT exec_user_time + exec_system_time, calls, total_exec_time
		   FROM pgss_ng_detail WHERE query LIKE '$pattern' AND toplevel = $toplevel});
	return split /\|/, $r;
}

# check_split($what, $between, $kernel_ms, $cpu, $calls, $heavy_cpu)
#	A statement ($what: cursor or portal) executed once, with a CPU-bound
#	statement run between its $between: the kernel counted $kernel_ms ms
#	of the backend's CPU around the CPU-bound statement, which is charged
#	at least half of it; the other entry ($cpu, $calls) under a tenth.
sub check_split
{
	my ($what, $between, $kernel_ms, $cpu, $calls, $heavy_cpu) = @_;
	note("$what: kernel $kernel_ms ms, the CPU-bound statement's CPU "
		  . "$heavy_cpu ms, the ${what}'s $cpu ms");
	cmp_ok($kernel_ms, '>=', 50, "$what: the CPU-bound statement used CPU");
	is($calls, 1, "the $what: one execution");
	cmp_ok($cpu, '>=', 0, "the ${what}'s CPU time is reported");
	cmp_ok($cpu, '<', 0.1 * $kernel_ms,
		"the ${what}'s statement is not charged the statement run between its $between");
	cmp_ok($heavy_cpu, '>=', 0.5 * $kernel_ms,
		"$what: the CPU-bound statement is charged its own CPU time");
	return;
}

# ------------------------------------------------------------- a cursor
untracked_psql($node,
	q{CREATE FUNCTION cursor4() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  c refcursor;
  r record;
  n bigint;
BEGIN
  OPEN c FOR SELECT g AS cursor4 FROM generate_series(1, 10) g;
  FETCH c INTO r;
  SELECT count(*) INTO n FROM generate_series(1, 5000000) g;
  FETCH c INTO r;
  CLOSE c;
  RETURN n;
END $$});
untracked_psql($node, 'SELECT pgss_ng_reset()');
my $out = $node->safe_psql(
	'postgres', qq{
SET pgss_ng.track = 'all';
$proc_cpu;
SELECT cursor4();
$proc_cpu;
});
my ($k0, undef, $k1) = split /\n/, $out;
my $kernel_ms = $k1 - $k0;
my ($cur_cpu, $cur_calls) =
  cpu_of('SELECT g AS cursor4 FROM generate_series($1, $2) g', 'false');
my ($heavy_cpu) =
  cpu_of('SELECT count(*) %FROM generate_series($1, $2) g', 'false');
check_split('cursor', 'fetches', $kernel_ms, $cur_cpu, $cur_calls, $heavy_cpu);

# ------------------------------------- a named portal fetched in chunks
untracked_psql($node, 'SELECT pgss_ng_reset()');
my $c = PgssNgWire->connect($node, 'postgres', 'postgres');
$c->query_row('BEGIN');
$c->parse('s4', 'SELECT g AS portal4 FROM generate_series(1, 10) g');
$c->bind('p4', 's4');
$c->execute('p4', 2);
$c->sync;
my $r = $c->results;
is(scalar @{ $r->{rows} } . '/' . $r->{suspended} . '/' . scalar @{ $r->{errors} },
	'2/1/0', 'the portal: 2 rows, then suspended');
($k0) = $c->query_row($proc_cpu);
$c->query_row($heavy);
($k1) = $c->query_row($proc_cpu);
$c->execute('p4', 2);
$c->sync;
$r = $c->results;
is(scalar @{ $r->{rows} } . '/' . $r->{suspended}, '2/1',
	'the portal: 2 more rows');
$c->close_portal('p4');
$c->sync;
$c->results;
$c->query_row('COMMIT');
$c->close;
$kernel_ms = $k1 - $k0;
my ($p_cpu, $p_calls) =
  cpu_of('SELECT g AS portal4 FROM generate_series($1, $2) g', 'true');
($heavy_cpu) = cpu_of('SELECT count(*) FROM generate_series($1, $2) g', 'true');
check_split('portal', 'chunks', $kernel_ms, $p_cpu, $p_calls, $heavy_cpu);

# ------------------------------------------------ parallel workers' CPU
untracked_psql($node,
	q{CREATE TABLE par5 AS SELECT g FROM generate_series(1, 400000) g;
	  VACUUM ANALYZE par5});
my $parallel_set = q{
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off};
like(
	untracked_psql($node,
		$parallel_set . q{;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(g) FROM par5 WHERE md5(g::text) < 'a'}),
	qr/Workers Launched: 2/,
	'the parallel plan launches 2 workers');

untracked_psql($node, 'SELECT pgss_ng_reset()');
$out = $node->safe_psql(
	'postgres', qq{
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM par5 WHERE md5(g::text) < 'a';
$proc_cpu;
SELECT count(*) FROM par5 WHERE md5(g::text) < 'a';
$proc_cpu;
$parallel_set;
$proc_cpu;
SELECT count(g) FROM par5 WHERE md5(g::text) < 'a';
$proc_cpu;
});
my (undef, $s0, undef, $s1, $l0, undef, $l1) = split /\n/, $out;
my $serial_ms = $s1 - $s0;
my $leader_ms = $l1 - $l0;
my ($par_cpu, $par_calls, $par_exec) =
  split /\|/, untracked_psql($node,
	q{SELECT exec_user_time + exec_system_time, calls, total_exec_time
	  FROM pgss_ng_detail WHERE query = 'SELECT count(g) FROM par5 WHERE md5(g::text) < $1'});
note("parallel: serial scan $serial_ms ms (kernel), leader over the "
	  . "parallel one $leader_ms ms (kernel), the parallel one's CPU "
	  . "$par_cpu ms in $par_exec ms");
cmp_ok($serial_ms, '>=', 100, 'the serial scan used CPU');
is($par_calls, 1, 'the parallel statement: one call (workers are not calls)');
cmp_ok($par_cpu - $leader_ms, '>=', 0.4 * $serial_ms,
	"the parallel statement's CPU time holds its workers' share");
cmp_ok($par_cpu, '<=', 3 * $par_exec + 50,
	'at most three processes for its execution time');

$node->stop;
done_testing();
