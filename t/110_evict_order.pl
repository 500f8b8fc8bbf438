# Eviction removes the least valuable entries of those it examines, exactly
# those, and never a hot entry while colder ones are among them.
#
# Values: a "hot" statement run three times has usage 3, a "cold" one run
# once 1, all decaying from the time of their last flush (half-life 60 s),
# so every cold entry is worth less than every hot one, and among cold ones
# the older is worth less.  Every live entry has a node in the eviction
# queue; a run moves the entries created since the last run to the queue's
# front, newest first, examines at most max(256, 3 x wanted) entries from
# the front, evicts the least valuable of them, puts the next least
# valuable (at most a quarter more than wanted, + 16) back at the front
# (the pool) and the other examined ones at the back (kind_evict.c).  The
# entry that triggers a run is referenced by its session's pending counts:
# pinned, so examined but counted as kept, not evicted.
#
# 1. pgss_ng.max = 100: 50 hot statements, then 50 cold ones.  The 101st
#    entry evicts: 101 live entries, a batch of 5 (5% of max) down to 95,
#    the new one pinned, hence 5 victims.  The run examines all 101: they
#    must be exactly the five oldest cold entries.
# 2. pgss_ng.max = 1000 (a batch of 50): 700 hot statements, then 300 cold
#    ones (entries 701 .. 1000).  The 1001st entry evicts; the run examines
#    256 entries: the 1001st and the 255 newest cold ones (1000 .. 746),
#    none of the older ones (745 .. 1).  Its 50 victims are the oldest of
#    those it examined: 746 .. 795, not a hot one; 796 .. 824 are its pool.
#    Then 50 more cold entries (1002 .. 1051): the 1051st evicts again; that
#    run examines the 50 new entries, the pool, and the 177 entries at the
#    queue's front (the 45 cold 745 .. 701, then 132 hot ones), and evicts
#    the 50 oldest cold ones it saw: 701 .. 745 and 796 .. 800.  After the
#    two runs exactly the 100 oldest cold entries are gone (701 .. 800), as
#    if each run had compared every entry, and every hot entry is there with
#    its three calls.
# With the order inverted (the most valuable first) the victims are hot
# entries and every victim test fails.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'evict_order',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 40);
# Sessions are untracked unless they say otherwise: a statement such as
# "SET pgss_ng.track = none" has a constant, and is given an entry at
# parse analysis on PostgreSQL 18 while tracking is still on (as
# pg_stat_statements does), which would be one entry too many here.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

# Statement k (1 .. 1600): "SELECT cI, cJ FROM w", one shape each.
sub stmt
{
	my ($k) = @_;
	my $i = int(($k - 1) / 40) + 1;
	my $j = ($k - 1) % 40 + 1;
	return "SELECT c$i, c$j FROM w";
}

# Reset, then statements 1 .. $nhot three times each and $nhot + 1 ..
# $nhot + $ncold once, in that order, in one session.
sub fill
{
	my ($nhot, $ncold) = @_;
	my $script = "SELECT pgss_ng_reset();\nSET pgss_ng.track = top;\n";
	$script .= join('', map { my $s = stmt($_); "$s;\n$s;\n$s;\n" } 1 .. $nhot);
	$script .= join('', map { stmt($_) . ";\n" } $nhot + 1 .. $nhot + $ncold);
	$node->safe_psql('postgres', $script);
	return;
}

# The statements of 1 .. $n that have no entry, as a string of ranges.
sub gone
{
	my ($n) = @_;
	my %present = map { $_ => 1 } split /\n/,
	  $node->safe_psql('postgres',
		"SELECT query FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'");
	my @gone = grep { !$present{ stmt($_) } } 1 .. $n;
	my @ranges;
	for my $k (@gone)
	{
		if (@ranges && $ranges[-1][1] == $k - 1) { $ranges[-1][1] = $k; }
		else { push @ranges, [ $k, $k ]; }
	}
	return join(' ', map { $_->[0] == $_->[1] ? $_->[0] : "$_->[0]-$_->[1]" } @ranges);
}

# "<entries with 3 calls> <entries>" of the statements above.
sub entries_calls
{
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE calls = 3) || ' ' || count(*)
		FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'});
}

# --- 1. max 100: the run examines every entry -------------------------------

fill(50, 50);
is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted, eviction_time FROM pgss_ng_info'),
	'100|0|0|0', 'max 100: 100 entries, none evicted yet, no time spent evicting');

# The 101st entry, from a fresh session.
$node->safe_psql('postgres', 'SET pgss_ng.track = top; ' . stmt(101));

is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted FROM pgss_ng_info'),
	'96|1|5',
	'max 100: the 101st entry evicted a batch of 5 in one run (dealloc 1)');
is($node->safe_psql('postgres', 'SELECT eviction_time > 0 FROM pgss_ng_info'),
	't', 'max 100: the run\'s time counts in eviction_time');
is(gone(101), '51-55', 'max 100: the victims are the five oldest cold entries');
is($node->safe_psql('postgres',
		"SELECT sum(calls) FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'"),
	50 * 3 + 45 + 1, 'max 100: the kept entries keep their calls');

# --- 2. max 1000: a run examines part of the queue --------------------------

$node->safe_psql('postgres', 'ALTER SYSTEM SET pgss_ng.max = 1000');
$node->reload;
$node->poll_query_until('postgres', 'SHOW pgss_ng.max', '1000')
  or die 'pgss_ng.max did not become 1000';

fill(700, 300);
is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted, eviction_time FROM pgss_ng_info'),
	'1000|0|0|0', 'max 1000: 1000 entries, none evicted yet; the reset restarted eviction_time');

$node->safe_psql('postgres', 'SET pgss_ng.track = top; ' . stmt(1001));
is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted FROM pgss_ng_info'),
	'951|1|50', 'max 1000: the 1001st entry evicted a batch of 50 in one run');
is(gone(1001), '746-795',
	'max 1000: first run: the 50 oldest of the cold entries it examined');

$node->safe_psql('postgres',
	"SET pgss_ng.track = top;\n"
	  . join('', map { stmt($_) . ";\n" } 1002 .. 1051));
is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted FROM pgss_ng_info'),
	'951|2|100', 'max 1000: the 1051st entry evicted another 50 in a second run');
is(gone(1051), '701-800',
	'max 1000: after two runs the 100 oldest cold entries are gone');
is(entries_calls(), '700 951',
	'max 1000: every hot entry kept, with its three calls');

$node->stop;
done_testing();
