# Eviction removes the least valuable entries, exactly those.
#
# With pgss_ng.max = 100, one session makes 100 entries in order: 50 "hot"
# statements run three times each, then 50 "cold" ones run once.  A hot
# entry's usage is 1 + 3 uses, a cold one's 1 + 1, all decaying from the
# time of their last flush (half-life 60 s), so the cold ones are worth
# less than the hot ones, and among them the older is worth less.  A new
# statement (the 101st entry) then evicts: 101 live entries, a batch of 5
# (5% of max) down to 95, one of them (the new one, referenced by the
# session's pending counts) pinned and counted as kept, hence 5 victims.
# They must be exactly the five oldest cold entries: the victim scan keeps
# only the least valuable entries seen (a bounded heap), which this checks
# against the order the values must have.
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
create_wide_table($node, 'w', 20);
# Sessions are untracked unless they say otherwise: a statement such as
# "SET pgss_ng.track = none" has a constant, and is given an entry at
# parse analysis on PostgreSQL 18 while tracking is still on (as
# pg_stat_statements does), which would be one entry too many here.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

# Statement k (1 .. 101): "SELECT cI, cJ FROM w", one shape each.
sub stmt
{
	my ($k) = @_;
	my $i = int(($k - 1) / 20) + 1;
	my $j = ($k - 1) % 20 + 1;
	return "SELECT c$i, c$j FROM w";
}

my $script = "SELECT pgss_ng_reset();\nSET pgss_ng.track = top;\n";
$script .= join('', map { my $s = stmt($_); "$s;\n$s;\n$s;\n" } 1 .. 50);
$script .= join('', map { stmt($_) . ";\n" } 51 .. 100);
$node->safe_psql('postgres', $script);

is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted FROM pgss_ng_info'),
	'100|0|0', '100 entries, none evicted yet');

# The 101st entry, from a fresh session.
$node->safe_psql('postgres', 'SET pgss_ng.track = top; ' . stmt(101));

is($node->safe_psql('postgres',
		'SELECT entries, dealloc, entries_evicted FROM pgss_ng_info'),
	'96|1|5',
	'the 101st entry evicted a batch of 5 in one run (dealloc 1)');

my %present = map { $_ => 1 } split /\n/,
  $node->safe_psql('postgres',
	"SELECT query FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'");
my @gone = grep { !$present{ stmt($_) } } 1 .. 101;
is("@gone", '51 52 53 54 55', 'the victims are the five oldest cold entries');
is($node->safe_psql('postgres',
		"SELECT sum(calls) FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'"),
	50 * 3 + 45 + 1, 'the kept entries keep their calls');

$node->stop;
done_testing();
