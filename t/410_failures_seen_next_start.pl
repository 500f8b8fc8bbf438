# A session whose statements all fail makes its failures visible to other
# sessions by the start of its next statement: the failures noted while
# the ERROR was in flight are merged and flushed when the next tracked
# statement begins (no statement end ever comes to flush them).
#
# Session F runs a statement that fails in its executor three times; an
# untracked observer then sees exactly 2 errors (the first two, flushed
# when the second and third began; the third waits in F, idle, for F's
# next statement: what the README says an idle session after a failure
# shows).  F's next statement waits for an advisory lock the test holds;
# while it waits (pg_locks shows it), the observer sees 3.  F is then let
# go, and its exit changes nothing.  No step waits for a time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'seen_next_start',
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE z (a int);
INSERT INTO z VALUES (0);
});
# Sessions are untracked unless they say otherwise.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

my $obs = $node->background_psql('postgres');
$obs->set_query_timer_restart;

# "calls errors" of the entry of the failing statement.
sub counts
{
	return $obs->query_safe(
		"SELECT coalesce(string_agg(calls || ' ' || errors, ','), 'none') "
		  . "FROM pgss_ng WHERE query = 'SELECT \$1 / a FROM z'");
}

my $f = $node->background_psql('postgres', on_error_stop => 0);
$f->set_query_timer_restart;
$f->query_safe('SET pgss_ng.track = top');
for my $i (1 .. 3)
{
	my ($out, $err) = $f->query('SELECT 1 / a FROM z');
	like($f->{stderr}, qr/division by zero/, "failing statement $i fails");
	$f->{stderr} = '';
}

is(counts(), '0 2',
	'idle after three failures: the first two are seen, flushed when the next statements began');

# F's next statement waits for a lock the observer holds.
$obs->query_safe('SELECT pg_advisory_lock(7)');
$f->query_until(qr/started\n/, "\\echo started\nSELECT pg_advisory_lock(7);\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
		'1'),
	'the next statement waits for its lock');
is(counts(), '0 3',
	'while the next statement runs, the third failure is seen: flushed at its start');

$obs->query_safe('SELECT pg_advisory_unlock(7)');
$f->query_until(qr/\@\@end\@\@\n/, "\\echo '\@\@end\@\@'\n");
$f->quit;
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
		'2'),
	'the failing session exited (the observer and the poll remain)');
is(counts(), '0 3', 'after its exit: still exactly 3 errors');

$obs->quit;
$node->stop;
done_testing();
