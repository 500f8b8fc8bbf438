# The evicted remainder (pgss_ng_evicted, issue 20): nothing counted is
# lost to eviction.
#
# With pgss_ng.max = 100, two unprivileged roles each run pgbench with 8
# clients (16 in all) and -t, so pgbench's count of executions is exact: a
# script of 200 distinct statements ("SELECT cI, cJ FROM w", one row each),
# 400 keys in all, so entries are evicted all the time.  Then:
#   - for the two roles, sum(calls) and sum(rows) over pgss_ng plus over
#     pgss_ng_evicted, plus pgss_ng_info.dropped (executions the backstop
#     refused, never recorded), equal the executions pgbench counted;
#   - both roles have rows in the remainder, and its entries add up to
#     the entries evicted;
#   - privacy: each role sees only its own rows, a member of
#     pg_read_all_stats and the superuser see both;
#   - a clean restart keeps the rows exactly; pgss_ng_reset(userid) clears
#     that role's rows only; an immediate stop (crash) discards them.
#   - resets racing the same churn: once the clients are gone, one final
#     pgss_ng_reset() leaves both views empty for the two roles, and the
#     remainder wholly empty.
# The test's own reads run with pgss_ng.track = none.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use PgssNgTest;

my $max = 100;
my $nstmt = 200;
my $clients_per_role = 8;
my $xacts = 5;
my @roles = qw(regress_churn_a regress_churn_b);

my $node = pgss_node(
	'evict_remainder',
	'pgss_ng.max' => $max,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	max_connections => 40);

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 100);
$node->safe_psql('postgres', 'INSERT INTO w (c1) VALUES (1)');
for my $r (@roles, 'regress_reader')
{
	$node->safe_psql('postgres', "CREATE ROLE $r LOGIN");
	$node->safe_psql('postgres', "GRANT SELECT ON w TO $r");
}
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO regress_reader');
my %oid = map {
	$_ => $node->safe_psql('postgres', "SELECT '$_'::regrole::oid")
} @roles;
my $oids = join(', ', map { $oid{$_} } @roles);

# the script: 200 distinct statements (by their columns), one row each
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $script = "$tmp/churn.sql";
open(my $fh, '>', $script) or die "cannot write $script: $!";
my $n = 0;
PAIRS:
for my $i (1 .. 99)
{
	for my $j ($i + 1 .. 100)
	{
		last PAIRS if $n == $nstmt;
		print $fh "SELECT c$i, c$j FROM w;\n";
		$n++;
	}
}
close($fh) or die "close: $!";

# reads of the test itself: not tracked
sub q_untracked
{
	my ($sql, %opt) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql, %opt);
}

# Start pgbench for each role; returns the handles and their outputs.
sub start_churn
{
	my @runs;
	for my $r (@roles)
	{
		my %run = (role => $r, out => '', err => '');
		$run{h} = IPC::Run::start(
			[
				'pgbench', '-n', '-h', $node->host, '-p', $node->port,
				'-U', $r, '-c', $clients_per_role, '-j', 2,
				'-t', $xacts, '-f', $script, 'postgres'
			],
			'<', \undef, '>', \$run{out}, '2>', \$run{err},
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @runs, \%run;
	}
	return @runs;
}

# Wait for the pgbench runs; returns the executions they counted.
sub finish_churn
{
	my ($label, @runs) = @_;
	my $execs = 0;
	for my $run (@runs)
	{
		$run->{h}->finish;
		is($run->{h}->result(0), 0, "$label: pgbench as $run->{role} exited 0")
		  or diag($run->{err});
		my ($done) = $run->{out} =~
		  m{number of transactions actually processed: (\d+)/};
		is($done // 'none', $clients_per_role * $xacts,
			"$label: pgbench as $run->{role} ran every transaction");
		like($run->{out}, qr/number of failed transactions: 0\b/,
			"$label: pgbench as $run->{role}: no failed transaction");
		$execs += ($done // 0) * $nstmt;
	}
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	wait_for_clients_gone($node, "$label: the pgbench backends have exited");
	return $execs;
}

# --- 1. exact sums under churn, no reset ---
q_untracked('SELECT pgss_ng_reset()');
my $execs = finish_churn('churn', start_churn());
is($execs, 2 * $clients_per_role * $xacts * $nstmt,
	"pgbench counted $execs executions");

my ($live_calls, $live_rows) = split /\|/, q_untracked(
	"SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0) FROM pgss_ng
	 WHERE userid IN ($oids)");
my ($ev_calls, $ev_rows, $ev_time) = split /\|/, q_untracked(
	"SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0),
	        coalesce(sum(total_exec_time), 0) > 0
	 FROM pgss_ng_evicted WHERE userid IN ($oids)");
my ($dropped, $nevicted) =
  split /\|/, q_untracked('SELECT dropped, entries_evicted FROM pgss_ng_info');
note("live calls $live_calls, evicted calls $ev_calls, dropped $dropped");
cmp_ok($ev_calls, '>', 0, 'executions of evicted entries are in the remainder');
is($live_calls + $ev_calls + $dropped, $execs,
	'sum(calls) over pgss_ng + pgss_ng_evicted (+ dropped) = executions pgbench counted');
is($live_rows + $ev_rows + $dropped, $execs,
	'sum(rows) over pgss_ng + pgss_ng_evicted (+ dropped) = rows returned');
is($ev_time, 't', 'the remainder sums total_exec_time');
is( q_untracked(
		"SELECT count(*) FROM pgss_ng_evicted
		 WHERE userid IN ($oids) AND calls > 0 AND entries > 0
		   AND toplevel AND dbid = (SELECT oid FROM pg_database
		                            WHERE datname = 'postgres')"),
	'2',
	'one row per role, with calls and entries');
is(q_untracked('SELECT sum(entries) FROM pgss_ng_evicted'),
	$nevicted, 'the remainder\'s entries add up to the entries evicted');

# --- 2. privacy ---
for my $r (@roles)
{
	is( q_untracked(
			"SET ROLE $r; SELECT count(*), count(*) FILTER (WHERE userid <> '$r'::regrole)
			 FROM pgss_ng_evicted"),
		'1|0',
		"$r sees only its own row");
}
is( q_untracked(
		"SET ROLE regress_reader;
		 SELECT count(DISTINCT userid) FROM pgss_ng_evicted WHERE userid IN ($oids)"),
	'2',
	'a member of pg_read_all_stats sees both roles\' rows');
is(q_untracked("SELECT count(DISTINCT userid) FROM pgss_ng_evicted WHERE userid IN ($oids)"),
	'2', 'the superuser sees both roles\' rows');

# --- 3. a clean restart keeps the remainder ---
# a tracked statement end evicts down to max, so that every live entry is
# saved and restored
$node->safe_psql('postgres', 'SELECT 1');
cmp_ok(q_untracked('SELECT entries FROM pgss_ng_info'), '<=', $max,
	"entries <= $max before the restart");
my $dump_sql = "SELECT userid, dbid, toplevel, plans, calls, rows,
        total_exec_time, shared_blks_hit, errors, entries, evicted_since
 FROM pgss_ng_evicted ORDER BY userid, dbid, toplevel";
my $live_sql = "SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE userid IN ($oids)";
my $before = q_untracked($dump_sql);
my $live_before = q_untracked($live_sql);
$node->restart;
is(q_untracked($dump_sql), $before, 'clean restart: the remainder is kept exactly');
is(q_untracked($live_sql), $live_before, 'clean restart: the entries are kept');

# --- 4. pgss_ng_reset(userid) clears that role's rows only ---
my $b_before = q_untracked(
	"SELECT calls, entries FROM pgss_ng_evicted WHERE userid = $oid{$roles[1]}");
q_untracked("SELECT pgss_ng_reset($oid{$roles[0]})");
is(q_untracked("SELECT count(*) FROM pgss_ng_evicted WHERE userid = $oid{$roles[0]}"),
	'0', 'pgss_ng_reset(userid) clears the role\'s rows');
is( q_untracked(
		"SELECT calls, entries FROM pgss_ng_evicted WHERE userid = $oid{$roles[1]}"),
	$b_before,
	'pgss_ng_reset(userid) keeps the other role\'s rows');

# --- 5. an immediate stop (crash) discards it ---
$node->stop('immediate');
$node->start;
is(q_untracked('SELECT count(*) FROM pgss_ng_evicted'), '0',
	'immediate stop: the remainder starts empty');
is(q_untracked('SELECT count(*) FROM pgss_ng'), '0',
	'immediate stop: the entries start empty');

# --- 6. resets racing the churn ---
q_untracked('SELECT pgss_ng_reset()');
my @runs = start_churn();
my $nresets = 0;
while (grep { $_->{h}->pumpable } @runs)
{
	$_->{h}->pump_nb for grep { $_->{h}->pumpable } @runs;
	# alternately everything, and one role's
	q_untracked($nresets % 2
		? "SELECT pgss_ng_reset($oid{$roles[$nresets % 4 == 1 ? 0 : 1]})"
		: 'SELECT pgss_ng_reset()');
	$nresets++;
}
note("$nresets resets while the clients ran");
finish_churn('churn with resets', @runs);
q_untracked('SELECT pgss_ng_reset()');
is(q_untracked("SELECT count(*) FROM pgss_ng WHERE userid IN ($oids)"),
	'0', 'after the final reset: no entry of the two roles');
is(q_untracked('SELECT count(*) FROM pgss_ng_evicted'),
	'0', 'after the final reset: the remainder is empty');

$node->stop;
done_testing();
