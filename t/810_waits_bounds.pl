# 810_waits_bounds.pl
#
# What bounds the wait profile, and what follows the entry:
#   - the per-event table of pgss_ng.wait_events_max rows (4 here): seven
#     statements each sleeping in PgSleep need seven rows; the table keeps
#     four, drops the least-sampled (not the statement that slept longest),
#     and counts each drop in pgss_ng_info.wait_events_dropped, while each
#     entry's samples per type (pgss_ng_detail's wait_other_time) keep
#     every sample;
#   - eviction (pgss_ng.max 100): the samples per type of the evicted
#     entries go to the evicted remainder (pgss_ng_evicted.wait_other_time
#     at least the evicted sleeper's), and their rows are given back to the
#     table (a new statement's row then drops nothing).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use PgssNgTest;

my $period = 5;
my $node = pgss_node(
	'bounds',
	'pgss_ng.max' => 100,
	'pgss_ng.wait_events_max' => 4,
	'pgss_ng.wait_sample_period' => $period,
	'pgss_ng.track' => 'top',
	'pgss_ng.save' => 'off');
untracked_psql($node, 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 130);
is(untracked_psql($node, 'SHOW pgss_ng.wait_events_max'), '4',
	'the table has 4 rows');

# $sql's answer once the sampler has added every sample taken so far.
sub settled
{
	my ($sql) = @_;
	waits_added($node);
	return untracked_psql($node, $sql);
}

my $other_of = q{SELECT query, wait_other_time FROM pgss_ng_detail
				 WHERE query LIKE 'SELECT pg_sleep%' ORDER BY query};

# --- the per-event table ---------------------------------------------------------
$node->safe_psql('postgres', 'SELECT pg_sleep(0.5)');
for my $k (1 .. 6)
{
	$node->safe_psql('postgres', "SELECT pg_sleep(0.1), count(c$k) FROM w");
}
my $others = settled($other_of);
my @others = split /\n/, $others;
is(scalar(@others), 7, 'seven sleeping statements');
is(scalar(grep { /\|(\d+)$/ && $1 > 0 } @others),
	7, 'each keeps its Timeout samples per type (wait_other_time > 0)')
  or diag($others);
my $rows = settled(
	q{SELECT count(*) FROM pgss_ng_waits WHERE wait_event_type <> 'CPU'});
cmp_ok($rows, '<=', 4, 'at most 4 rows of wait events are kept');
my $dropped = untracked_psql($node,
	'SELECT wait_events_dropped FROM pgss_ng_info');
cmp_ok($dropped, '>=', 3, 'the 3 rows beyond them are counted as dropped');
is( untracked_psql(
		$node,
		q{SELECT count(*) FROM pgss_ng_waits w JOIN pgss_ng s USING (queryid)
		  WHERE s.query = 'SELECT pg_sleep($1)' AND w.wait_event = 'PgSleep'}),
	'1',
	'the most sampled row (the longest sleep) is kept');
my $sleeper = untracked_psql($node,
	q{SELECT wait_other_time FROM pgss_ng_detail
	  WHERE query = 'SELECT pg_sleep($1)'});
cmp_ok($sleeper, '>=', 0.75 * 500, 'the longest sleep has its samples');

# --- eviction ---------------------------------------------------------------------
# 130 new statements: the table of 100 evicts the oldest, the sleepers
$node->safe_psql('postgres',
	join("\n", map { "SELECT c$_ FROM w;" } 1 .. 130));
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 0 FROM pgss_ng WHERE query LIKE 'SELECT pg_sleep%'}),
	'the sleepers were evicted');
cmp_ok(
	untracked_psql(
		$node,
		q{SELECT sum(wait_other_time) FROM pgss_ng_evicted
		  WHERE userid = 'postgres'::regrole::oid AND toplevel}),
	'>=', $sleeper,
	'the evicted remainder has the evicted sleeper\'s wait time');
# their rows went back to the table: a new one drops nothing
$node->safe_psql('postgres', q{SELECT pg_sleep(0.1), 'after'});
settled($other_of);
is( untracked_psql(
		$node,
		q{SELECT count(*) FROM pgss_ng_waits w JOIN pgss_ng s USING (queryid)
		  WHERE s.query = 'SELECT pg_sleep($1), $2' AND w.wait_event = 'PgSleep'}),
	'1',
	'a new statement gets a row');
is(untracked_psql($node, 'SELECT wait_events_dropped FROM pgss_ng_info'),
	$dropped, 'without dropping one: the evicted entries gave theirs back');

stop_and_check_log($node);
done_testing();
