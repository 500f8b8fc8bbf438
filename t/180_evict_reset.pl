# 180_evict_reset.pl
#
# Resets and what eviction keeps (the evicted remainder, the eviction log,
# the event counters of pgss_ng_info).  pgss_ng.max = 100, evicted_log
# 100; statements are tracked only where a session says so.
#
# 1. A full reset is one locked step: backend A, resetting everything, is
#    stopped with gdb in pgss_ng_kind_reset_counters (the restart of
#    dealloc, entries_evicted, ...).  Meanwhile B makes 120 new entries,
#    past max; once A is let go, C makes one more.  Then the remainder's
#    rows, the log and the counters agree: sum(entries) of
#    pgss_ng_evicted = count(*) of pgss_ng_evictions = entries_evicted,
#    and dealloc counts the runs.  (With the counters zeroed after the
#    remainder was cleared and pgss_ng_dealloc released, B's evictions
#    in between would stay in the rows and the log while the counters
#    forgot them.)
# 2. A partial reset takes the eviction log's rows of what it removed:
#    roles u1 and u2 in postgres and the superuser in db2 each run the
#    same 10 statements, which 120 newer ones evict, all of them into the
#    log.  A reset of one queryid, then of u1, then of db2 each take
#    exactly their rows out of the log; the others stay in their order, and
#    later victims follow them.
# 3. The overflow row: 1010 roles each run one statement, all evicted:
#    the first 1000 roles' rows fill the remainder's table, the others go
#    to the overflow row (userid NULL).  A reset of a role with a row of
#    its own, whose bit (oid % 64) no role of the overflow row has, leaves
#    the overflow row as it was; a reset of a role in the overflow row
#    clears it (its sums of other roles go with it: they are not kept
#    apart).
# Needs gdb and permission to ptrace a backend for part 1: otherwise the
# whole file is skipped, saying why.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'evict_reset',
	'pgss_ng.max' => 100,
	'pgss_ng.evicted_log' => 100,
	'pgss_ng.track' => 'none',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 40);
$node->safe_psql('postgres', 'GRANT SELECT ON w TO PUBLIC');

# Statement k (1 .. 780): "SELECT cI, cJ FROM w", I < J, one shape each.
my @shapes;
for my $i (1 .. 39)
{
	push @shapes, map { "SELECT c$i, c$_ FROM w" } $i + 1 .. 40;
}

# Run statements $from .. $to (1-based) once each, tracked, in database
# $db, as $role if given.
sub run_stmts
{
	my ($from, $to, $db, $role) = @_;
	my $script = "SET pgss_ng.track = top;\n";
	$script .= "SET ROLE $role;\n" if defined $role;
	$script .= join('', map { "$shapes[$_ - 1];\n" } $from .. $to);
	$node->safe_psql($db // 'postgres', $script);
	return;
}

sub agree
{
	return untracked_psql(
		$node, q{
SELECT (SELECT coalesce(sum(entries), 0) FROM pgss_ng_evicted) || ' ' ||
	   (SELECT count(*) FROM pgss_ng_evictions) || ' ' ||
	   entries_evicted || ' ' || CASE WHEN dealloc > 0 THEN 't' ELSE 'f' END
FROM pgss_ng_info});
}

# -- 1. a full reset is one locked step ----------------------------------------

my $sess_a = $node->background_psql('postgres');
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
$sess_a->set_query_timer_restart;
gdb_usable_or_skip($apid, 'pgss_ng_kind_reset_counters');

run_stmts(1, 150);
like(agree(), qr/^(\d+) \1 \1 t$/, 'before: rows, log and counters agree');
my ($g, $mark) = gdb_stop_at('full reset', $apid,
	'pgss_ng_kind_reset_counters', 'pgss_ng_kind_reset_counters',
	$sess_a, 'SELECT pgss_ng_reset() IS NOT NULL;');
run_stmts(151, 270);
gdb_release($g);
is(wait_async($sess_a, $mark), 't', 'A\'s reset finished');
run_stmts(271, 271);
my ($rows, $logged, $evicted, $runs) = split / /, agree();
cmp_ok($evicted, '>=', 21, "after: $evicted entries evicted since the reset");
is("$rows $logged $runs", "$evicted $evicted t",
	'after: the remainder\'s rows, the log and entries_evicted agree');

# -- 2. partial resets and the eviction log ---------------------------------------

$node->safe_psql(
	'postgres', q{
CREATE ROLE u1; CREATE ROLE u2; CREATE DATABASE db2;
SELECT pgss_ng_reset()});
$node->safe_psql('db2',
	"SELECT format('CREATE TABLE w (%s)', string_agg(format('c%s int', i), ', ' ORDER BY i))
	 FROM generate_series(1, 40) i \\gexec");
run_stmts(301, 310, 'postgres', 'u1');
run_stmts(301, 310, 'postgres', 'u2');
run_stmts(301, 310, 'db2');
run_stmts(401, 520);

# statements 301 .. 310: "SELECT c9, c26 FROM w" .. "SELECT c9, c35 FROM w"
my ($ours) = $shapes[300] =~ /^SELECT (c\d+), /;
is($ours, 'c9', 'statements 301 .. 310 select c9 first, and no other does here');
my $log_sql = qq{
SELECT string_agg(coalesce(r.rolname, '?') || '\@' || d.datname || ':' ||
				  substring(e.query from 'c[0-9]+, c[0-9]+') || '#' || e.queryid, ';'
				  ORDER BY e.n)
FROM pgss_ng_evictions() WITH ORDINALITY
	 AS e(userid, dbid, toplevel, queryid, query, calls, stats_since,
		  evicted_at, n)
LEFT JOIN pg_roles r ON r.oid = e.userid
JOIN pg_database d ON d.oid = e.dbid
WHERE e.query LIKE 'SELECT $ours, %'};
my @log = split /;/, untracked_psql($node, $log_sql);
is(scalar @log, 30, 'the 30 statements of u1, u2 and db2 are in the log');

sub keep_log
{
	my ($drop) = @_;
	@log = grep { !$drop->($_) } @log;
	return join(';', @log);
}

# (in db2 the statement has another queryid before PostgreSQL 18, whose
# queryids name tables by OID)
my $qid = untracked_psql(
	$node, qq{
SELECT DISTINCT queryid FROM pgss_ng_evictions
WHERE query = '$shapes[300]' AND dbid = (SELECT oid FROM pg_database WHERE datname = 'postgres')});
untracked_psql($node, "SELECT pgss_ng_reset(0, 0, $qid)");
is(untracked_psql($node, $log_sql), keep_log(sub { $_[0] =~ /#\Q$qid\E$/ }),
	'a reset of one queryid takes its rows out of the log, the others '
	  . 'stay in order');
untracked_psql($node, "SELECT pgss_ng_reset('u1'::regrole, 0, 0)");
is(untracked_psql($node, $log_sql), keep_log(sub { $_[0] =~ /^u1@/ }),
	'a reset of u1 takes its rows out of the log');
untracked_psql($node,
	"SELECT pgss_ng_reset(0, (SELECT oid FROM pg_database WHERE datname = 'db2'), 0)");
is(untracked_psql($node, $log_sql), keep_log(sub { $_[0] =~ /\@db2:/ }),
	'a reset of db2 takes its rows out of the log');
is( untracked_psql(
		$node,
		"SELECT count(*) FROM pgss_ng_evictions WHERE query LIKE 'SELECT $ours, %'"),
	'9', 'u2\'s 9 rows stay');
my $before = untracked_psql($node, 'SELECT count(*) FROM pgss_ng_evictions');
run_stmts(521, 540);
cmp_ok(untracked_psql($node, 'SELECT count(*) FROM pgss_ng_evictions'),
	'>', $before, 'later victims are logged');
is(untracked_psql($node, $log_sql), join(';', @log),
	'... after the rows kept, which stay as they were');

# -- 3. the overflow row ------------------------------------------------------------

my $nroles = 1010;
$node->safe_psql(
	'postgres', qq{
DO \$\$ BEGIN
  FOR i IN 1 .. $nroles LOOP EXECUTE format('CREATE ROLE r%s', i); END LOOP;
END \$\$;
SELECT pgss_ng_reset()});
run_stmts(1, 1, 'postgres', 'r1');
my $script = "SET pgss_ng.track = top;\n";
$script .= join('', map { "SET ROLE r$_;\n$shapes[600];\n" } 2 .. $nroles);
$node->safe_psql('postgres', $script);
# r1 evicts the last roles' entries; its row is in the table already
run_stmts(601, 720, 'postgres', 'r1');

my $overflow_sql =
  'SELECT entries || \'/\' || calls FROM pgss_ng_evicted WHERE userid IS NULL';
my $overflow = untracked_psql($node, $overflow_sql);
like($overflow, qr/^\d+\/\d+$/, "an overflow row: $overflow");
is(untracked_psql($node, 'SELECT count(*) FROM pgss_ng_evicted WHERE userid IS NOT NULL'),
	'1000', '1000 rows of their own');
# the roles in the overflow row: evicted, without a row or a live entry
my @in_overflow = split /\n/, untracked_psql(
	$node, qq{
SELECT r.oid FROM pg_roles r
WHERE r.rolname ~ '^r[0-9]+\$'
  AND NOT EXISTS (SELECT FROM pgss_ng_evicted e WHERE e.userid = r.oid)
  AND NOT EXISTS (SELECT FROM pgss_ng s WHERE s.userid = r.oid)
ORDER BY 1});
cmp_ok(scalar @in_overflow, '>', 0,
	scalar(@in_overflow) . ' roles in the overflow row');
my %bits = map { ($_ % 64) => 1 } @in_overflow;
my $keep = untracked_psql(
	$node, q{
SELECT e.userid FROM pgss_ng_evicted e
WHERE e.userid IS NOT NULL AND e.userid::bigint % 64 NOT IN (}
	  . join(', ', keys %bits) . q{) ORDER BY 1 LIMIT 1});
like($keep, qr/^\d+$/, 'a role with a row, whose bit no role of the overflow row has');
untracked_psql($node, "SELECT pgss_ng_reset($keep, 0, 0)");
is( untracked_psql(
		$node, "SELECT count(*) FROM pgss_ng_evicted WHERE userid = $keep"),
	'0', 'its reset removes its row');
is(untracked_psql($node, $overflow_sql), $overflow,
	'... and leaves the overflow row as it was');
untracked_psql($node, "SELECT pgss_ng_reset($in_overflow[0], 0, 0)");
is(untracked_psql($node, $overflow_sql), '',
	'a reset of a role in the overflow row clears it');

$node->stop;
done_testing();
