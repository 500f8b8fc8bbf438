# A full text arena makes room (issue 14, item 2).
#
# query_text_memory = 256kB.  alice runs a hot statement 30 times; bob
# (another unprivileged role) then fills the arena with 200 distinct texts
# of about 2 kB (more than the arena holds): each is stored, by evicting
# older entries (dealloc > 0, qtext_dropped = 0).  Afterwards alice's 20 new
# statements each get their text (read back exactly, right after each
# one), qtext_bytes stays <= the cap after every statement, and the hot
# statement, run 10 more times, keeps its text and exactly 40 calls.
# Room is made by evicting the least valuable entries (dealloc > 0).
# Before the fix every new statement showed query NULL: nothing freed the
# space while the table was far below pgss_ng.max.
#
# The statements select columns of a wide table (distinct queryids, no
# constants, so exact texts on every version); bob's carry their 2 kB in a
# comment, which stays in the normalized text, and alice's are told apart
# by their column aliases.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node =
  start_small_arena_node('qtext_pressure', autovacuum => 'off');
setup_alice_bob($node, 30);

sub as_role
{
	my ($role, $sql, $tracked) = @_;
	local $ENV{PGOPTIONS} = $tracked ? '' : '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql, extra_params => [ '-U', $role ]);
}

sub under_cap
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres',
		'SELECT qtext_bytes <= qtext_limit_bytes FROM pgss_ng_info');
}

my $hot = 'SELECT c1 AS alice_hot FROM w';
as_role('alice', "$hot;\n" x 30, 1);

my $sql = '';
# 200 distinct pairs of columns of w (none with c1 first: alice's)
my $k = 0;
for my $i (2 .. 30)
{
	for my $j (grep { $_ != $i } 1 .. 30)
	{
		$sql .= "SELECT c$i, c$j FROM w /*" . ('x' x 2048) . "*/;\n"
		  if $k++ < 200;
	}
}
as_role('bob', $sql, 1);
is( $node->safe_psql(
		'postgres', 'SELECT dealloc > 0 AND qtext_dropped = 0 FROM pgss_ng_info',
		extra_params => [ '-c', 'SET pgss_ng.track = none' ]),
	't',
	'bob\'s 200 texts (more than the arena holds) were all stored, by evicting');
is(under_cap(), 't', 'qtext_bytes <= the cap after the fill');

my ($ok_text, $ok_cap) = (0, 0);
for my $i (2 .. 21)
{
	my $stmt = "SELECT c1, c$i AS alice_new_$i FROM w";
	as_role('alice', "$stmt;", 1);
	my $q = as_role('alice',
		qq{SELECT calls || ' ' || coalesce(query, 'NULL') FROM pgss_ng
		   WHERE userid = 'alice'::regrole::oid
		   ORDER BY stats_since DESC LIMIT 1});
	$ok_text++ if $q eq "1 $stmt";
	note("alice_new_$i: $q") if $q ne "1 $stmt";
	$ok_cap++ if under_cap() eq 't';
}
is($ok_text, 20, 'each of alice\'s 20 new statements got its text');
is($ok_cap, 20, 'qtext_bytes <= the cap after each of them');

as_role('alice', "$hot;\n" x 10, 1);
is( as_role(
		'alice',
		qq{SELECT calls || ' ' || query FROM pgss_ng
		   WHERE userid = 'alice'::regrole::oid
			 AND query = '$hot'}),
	"40 $hot",
	'the hot statement keeps its text and exactly 40 calls');
is( $node->safe_psql('postgres', 'SELECT dealloc > 0 FROM pgss_ng_info'),
	't', 'room was made by evicting entries (dealloc > 0)');

$node->stop;
done_testing();
