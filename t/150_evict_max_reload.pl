# pgss_ng.max changed by a reload takes hold in every backend, even one
# busy in a statement that began before the reload (a backend reads its
# configuration again only at its next command): eviction and the
# backstop use one value, published in the kind's control block by the
# pgss_ng writer when it reloads, and pgss_ng_info.entries_max shows it.
#
# Each part holds a "sleeper" session inside one statement, started before
# the reload: the statement calls after_lock(), which waits for an advisory
# lock a second session holds, then (optionally) runs new statements and
# returns entries_max as it sees it.  The test reloads, waits until
# entries_max shows the new value (the writer has published it), then lets
# the sleeper go by releasing the lock.  No step waits for a time.
#
# 1. Raise 100 -> 5000 while the sleeper waits: 400 new statements get
#    entries; when the sleeper's statement ends, its flush must not evict
#    down to its own stale 100 (dealloc stays 0), and it sees 5000.
# 2. Lower 5000 -> 100 while another sleeper waits: the writer evicts
#    down to 100 at once; the sleeper (stale copy 5000), let go, runs 300
#    new statements (track = all): the table must stay at 100 when its
#    statement ends, not grow to ~400, and it sees 100.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'max_reload',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 20);
# after_lock(k, n): wait for advisory lock k, run n statements ("SELECT
# cI, cJ FROM w", one shape each: nested, so new entries even where the
# top-level ones of stmt() below exist), release the lock and return
# entries_max as this backend sees it then.
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION after_lock(k int, n int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_advisory_lock(k);
	FOR s IN 1 .. n LOOP
		EXECUTE format('SELECT c%s, c%s FROM w', (s - 1) / 20 + 1, (s - 1) % 20 + 1);
	END LOOP;
	PERFORM pg_advisory_unlock(k);
	RETURN (SELECT entries_max FROM pgss_ng_info);
END $$;
});
# Sessions are untracked unless they say otherwise.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

# Statement k (1 .. 400): "SELECT cI, cJ FROM w", one shape each.
sub stmt
{
	my ($k) = @_;
	return sprintf('SELECT c%d, c%d FROM w', int(($k - 1) / 20) + 1,
		($k - 1) % 20 + 1);
}

sub info
{
	return $node->safe_psql('postgres',
		'SELECT entries, entries_max, dealloc FROM pgss_ng_info');
}

# Start a sleeper: a session (tracking at $track) in after_lock($k, $n),
# waiting for lock $k, which $holder holds.
sub start_sleeper
{
	my ($holder, $k, $n, $track) = @_;
	$holder->query_safe("SELECT pg_advisory_lock($k)");
	my $s = $node->background_psql('postgres');
	$s->set_query_timer_restart;
	$s->query_safe("SET pgss_ng.track = '$track'");
	$s->query_until(qr/started\n/,
		"\\echo started\nSELECT after_lock($k, $n);\n");
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
			'1'),
		"sleeper $k waits for its lock");
	return $s;
}

# Let the sleeper go; return what after_lock() returned.
sub release_sleeper
{
	my ($holder, $s, $k) = @_;
	$holder->query_safe("SELECT pg_advisory_unlock($k)");
	my $out = $s->query_until(qr/\@\@end\@\@\n/, "\\echo '\@\@end\@\@'\n");
	$out =~ s/\@\@end\@\@\n//;
	chomp $out;
	$s->quit;
	return $out;
}

sub reload_max
{
	my ($max) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET pgss_ng.max = $max");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	ok( $node->poll_query_until(
			'postgres', 'SELECT entries_max FROM pgss_ng_info', $max),
		"entries_max shows $max after the reload");
	return;
}

my $holder = $node->background_psql('postgres');
$holder->set_query_timer_restart;

############################################################################
# 1. Raising max while a backend that started before the reload is busy.
############################################################################

my $sleeper = start_sleeper($holder, 1, 0, 'top');
reload_max(5000);

$node->safe_psql('postgres',
	"SET pgss_ng.track = top;\n" . join('', map { stmt($_) . ";\n" } 1 .. 400));
my ($entries, $max, $dealloc) = split /\|/, info();
cmp_ok($entries, '>=', 400, 'raised: 400 new statements all have entries');
is($dealloc, 0, 'raised: nothing evicted');

is(release_sleeper($holder, $sleeper, 1), 5000,
	'raised: the busy backend sees entries_max 5000 when its statement ends');
($entries, $max, $dealloc) = split /\|/, info();
cmp_ok($entries, '>=', 400,
	'raised: the busy backend\'s flush kept the entries (no eviction to its old 100)');
is($dealloc, 0, 'raised: still nothing evicted');

############################################################################
# 2. Lowering max while a backend that started before the reload is busy.
############################################################################

$sleeper = start_sleeper($holder, 2, 300, 'all');
reload_max(100);
ok( $node->poll_query_until(
		'postgres', 'SELECT entries <= 100 FROM pgss_ng_info'),
	'lowered: the writer evicted down to 100 at the reload');

is(release_sleeper($holder, $sleeper, 2), 100,
	'lowered: the busy backend sees entries_max 100 when its statement ends');
($entries, $max, $dealloc) = split /\|/, info();
cmp_ok($entries, '<=', 100,
	'lowered: after 300 new statements of the busy backend, at most 100 entries');
is( $node->safe_psql('postgres',
		'SELECT entries_allocated <= 200 FROM pgss_ng_info'),
	't', 'lowered: allocated bodies within the new backstop');
cmp_ok($dealloc, '>', 0, 'lowered: entries were evicted');

$holder->quit;
$node->stop;
done_testing();
