# 190_evict_hot_under_churn.pl
#
# A statement that comes back is not evicted again while statements run
# once are there, however many new statements came between two of its
# calls.  pgss_ng.max = 100, evicted_log = 2000 (every victim stays in
# the log).
#
# Four sessions, driven one batch at a time in a fixed order (no timing):
# the hot session H runs the hot statement once, then 20 new statements;
# then each of the churn sessions C1, C2, C3 runs 40 new statements, as
# three churn clients outpace a hot one on a busy machine: 140 new
# statements between two calls of the hot one, more than max.  Ten rounds.
# - Round 1: the hot statement's first entry ranks with the statements
#   run once (nothing tells them apart yet); older than the 100 made
#   after it, it is evicted (its call goes to the evicted remainder).
# - From round 2 on, its entry starts with the value the evicted one had
#   (eviction remembers it: the ghost), plus its new call, so it is worth
#   more than any statement run once and is never evicted again: at the
#   end it is there with the 9 calls of rounds 2 .. 10, and the eviction
#   log holds it once, with 1 call.  (An entry that started from nothing
#   each time would be evicted every round, its calls all in the
#   remainder.)
# - Exactness: the entry's calls plus the log's are the 10 calls made.
# - After a full reset, which forgets the ghosts, the same round's hot
#   call starts from nothing again: evicted at the next round.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'evict_hot_under_churn',
	'pgss_ng.max' => 100,
	'pgss_ng.evicted_log' => 2000,
	'pgss_ng.track' => 'none',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 40);

# New statements, one shape each: "SELECT cI, cJ, cK FROM w", I < J < K.
my @new;
for my $i (1 .. 38)
{
	for my $j ($i + 1 .. 39)
	{
		push @new, map { "SELECT c$i, c$j, c$_ FROM w;" } $j + 1 .. 40;
	}
}
my $next = 0;

sub new_stmts
{
	my ($n) = @_;
	my $sql = join("\n", @new[ $next .. $next + $n - 1 ]);
	$next += $n;
	return $sql;
}

my @sess = map { $node->background_psql('postgres') } 1 .. 4;
for my $s (@sess)
{
	$s->set_query_timer_restart;
	$s->query_safe('SET pgss_ng.track = top');
}
my ($hot, @churn) = @sess;
my $hot_sql = 'SELECT count(*) FROM w WHERE c1 = 7;';
my $hot_text = 'SELECT count(*) FROM w WHERE c1 = $1';

sub round
{
	$hot->query_safe($hot_sql);
	$hot->query_safe(new_stmts(20));
	$_->query_safe(new_stmts(40)) for @churn;
	return;
}

sub hot_seen
{
	return untracked_psql(
		$node, qq{
SELECT (SELECT coalesce(sum(calls), 0) FROM pgss_ng WHERE query = '$hot_text')
	   || ' ' ||
	   (SELECT count(*) || ' ' || coalesce(sum(calls), 0)
		FROM pgss_ng_evictions WHERE query = '$hot_text')});
}

untracked_psql($node, 'SELECT pgss_ng_reset()');
round() for 1 .. 10;
my ($calls, $logged, $logged_calls) = split / /, hot_seen();
cmp_ok(
	untracked_psql($node, 'SELECT entries_evicted FROM pgss_ng_info'),
	'>=', 1200, 'about 140 entries evicted per round');
is($logged, 1, 'the hot statement was evicted once (its first entry)');
is($calls, 9, 'its entry holds the 9 calls made since');
is($calls + $logged_calls, 10, 'no call lost: 9 + 1');
is( untracked_psql(
		$node,
		"SELECT count(*) FROM pgss_ng_evictions WHERE calls <> 1 OR query = '$hot_text'"
	),
	1, 'every other victim was run once');

# A full reset forgets what eviction remembered.
untracked_psql($node, 'SELECT pgss_ng_reset()');
round() for 1 .. 2;
($calls, $logged, $logged_calls) = split / /, hot_seen();
is("$calls $logged", '1 1',
	'after a full reset the hot statement starts again from nothing');

$_->quit for @sess;
$node->stop;
done_testing();
