# Privacy of the text arena: what a role observes about its own entries
# must not depend on the texts of other roles (issue 14, item 1).
#
# query_text_memory = 256kB.  alice (unprivileged) runs
# SET app.api_key = 'k-7731' 50 times (so that eviction keeps it).  bob
# (unprivileged) then fills the arena with his own statements: 200 of
# about 2 kB, then one each of every padding length from 1024 bytes down
# to 0 (more than the arena holds: entries are evicted to make room).  For
# each guess g (the right one among four wrong ones of the same length)
# bob runs SET app.api_key = 'g' and looks at his own entry: it exists
# with calls = 1 and shows its text, for every guess alike.
# Before the fix of issue 14 item 1 (no eviction for room then: the arena
# stayed full) the right guess alone showed its text, because an identical
# text already stored was shared before the size cap was checked; now the
# cap applies to each entry's full text, shared or not, before the lookup,
# and a full arena makes room by eviction.  The views are read with
# pgss_ng.track = none, so reading records nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('qtext_privacy');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pgss_ng'
pgss_ng.max = 5000
pgss_ng.query_text_memory = 256kB
pgss_ng.track = top
pgss_ng.track_utility = on
pgss_ng.track_planning = off
pgss_ng.save = off
autovacuum = off
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT SET ON PARAMETER pgss_ng.track TO alice, bob;
});

# Run SQL as a role; quietly (untracked) unless $tracked.
sub as_role
{
	my ($role, $sql, $tracked) = @_;
	local $ENV{PGOPTIONS} = $tracked ? '' : '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql, extra_params => [ '-U', $role ]);
}

my $secret = 'k-7731';
as_role('alice', "SET app.api_key = '$secret';\n" x 50, 1);
is( as_role(
		'alice',
		q{SELECT count(*) FROM pgss_ng WHERE query = 'SET app.api_key = ''k-7731'''}),
	'1',
	'alice: her statement has its text');

# bob fills the arena: 200 texts of 2 kB, then every padding length from
# 1024 down to 0 once (each stored if it still fits).
my $sql = '';
$sql .= sprintf("SET app.p%05d = '%s';\n", $_, 'x' x 2048) for 1 .. 200;
my $n = 200;
for my $pad (reverse 0 .. 1024)
{
	$n++;
	$sql .= sprintf("SET app.p%05d = '%s';\n", $n, 'y' x $pad);
}
as_role('bob', $sql, 1);

is( $node->safe_psql(
		'postgres',
		q{SELECT qtext_bytes <= qtext_limit_bytes AND dealloc > 0
		  FROM pgss_ng_info}),
	't',
	'bob went past the cap: entries were evicted, qtext_bytes <= the cap');
my @guesses = ('k-1234', 'k-7731', 'k-0000', 'k-9999', 'k-7730');
my %outcome;
for my $g (@guesses)
{
	as_role('bob', "SET app.api_key = '$g';", 1);
	# bob's newest entry is the one of this guess (reads are untracked).
	$outcome{$g} = as_role(
		'bob', q{
		SELECT calls || ' ' || coalesce(query, 'NULL') FROM pgss_ng
		WHERE userid = 'bob'::regrole::oid
		ORDER BY stats_since DESC LIMIT 1});
}

for my $g (@guesses)
{
	is($outcome{$g}, "1 SET app.api_key = '$g'",
		"guess $g: bob's entry exists, counted once, with its text");
}
is(scalar(keys %{ { map { $outcome{$_} =~ s/\Q$_\E/G/r => 1 } @guesses } }),
	1, 'the right guess and the wrong ones look the same to bob');

# alice's own entry is unaffected.
is( as_role(
		'alice',
		q{SELECT calls FROM pgss_ng WHERE query = 'SET app.api_key = ''k-7731'''}),
	'50',
	'alice still sees her text, calls = 50');

$node->stop;
done_testing();
