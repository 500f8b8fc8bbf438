# 820_waits_pg_wait_sampling.pl
#
# pgss_ng's wait profile next to pg_wait_sampling's, both preloaded and
# sampling every 5 ms, where this server's installation has
# pg_wait_sampling (Debian's postgresql-15-pg-wait-sampling, which
# scripts/install-deps.sh installs; the PyPI builds of 16-18 have none):
# for a statement that sleeps 1 s and an UPDATE that waits about 1 s for
# a row lock, each wait event's share of the statement's wait samples in
# pg_wait_sampling's profile (of its backend and queryid) is within 10
# points of its share in pgss_ng's (pg_wait_sampling 1.1 keeps no CPU
# samples: only wait events are compared).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use PgssNgTest;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $have = -e "$pkglibdir/pg_wait_sampling.so";

SKIP:
{
	skip "pg_wait_sampling is not installed in $pkglibdir (only Debian packages it, for PostgreSQL 15)", 6
	  unless $have;

	my $node = pgss_node(
		'pgws',
		'shared_preload_libraries' => 'pg_wait_sampling,pgss_ng',
		'pg_wait_sampling.profile_period' => 5,
		'pgss_ng.wait_sample_period' => 5,
		'pgss_ng.save' => 'off');
	untracked_psql($node, q{
CREATE EXTENSION pgss_ng;
CREATE EXTENSION pg_wait_sampling;
CREATE TABLE t (id int PRIMARY KEY, v int);
INSERT INTO t VALUES (1, 0);
});

	# pgss_ng's samples of the statement $text and pg_wait_sampling's of
	# backend $pid and the same queryid, event by event
	my $compare = sub {
		my ($name, $text, $pid) = @_;
		my $sql = qq{
SELECT w.wait_event_type || ':' || w.wait_event, w.samples, coalesce(p.count, 0)
FROM pgss_ng_waits w JOIN pgss_ng s USING (userid, dbid, toplevel, queryid)
LEFT JOIN pg_wait_sampling_profile p
  ON p.pid = $pid AND p.queryid = w.queryid
	 AND p.event_type = w.wait_event_type AND p.event = w.wait_event
WHERE s.query = '$text' AND w.wait_event IS NOT NULL ORDER BY 1};
		waits_added($node);
		my $cur = untracked_psql($node, $sql);
		my (%ours, %theirs);
		my ($ours, $theirs) = (0, 0);
		for my $line (split /\n/, $cur)
		{
			my ($ev, $a, $b) = split /\|/, $line;
			($ours{$ev}, $theirs{$ev}) = ($a, $b);
			$ours += $a;
			$theirs += $b;
		}
		cmp_ok($theirs, '>', 50, "$name: pg_wait_sampling saw its waits")
		  or diag($cur);
		# its collector counts the ticks it made, pgss_ng the time they
		# covered: compare each event's share of the wait samples
		my $agree = 1;
		for my $ev (keys %ours)
		{
			$agree = 0
			  if abs($ours{$ev} / ($ours || 1) - $theirs{$ev} / ($theirs || 1)) > 0.1;
		}
		ok($agree, "$name: each event's share within 10 points of pg_wait_sampling's")
		  or diag($cur);
		return;
	};

	my $sess = $node->background_psql('postgres');
	my $pid = $sess->query_safe('SELECT pg_backend_pid()');
	$sess->query_safe('SELECT pg_sleep(1)');
	$compare->('pg_sleep', 'SELECT pg_sleep($1)', $pid);

	my $holder = $node->background_psql('postgres');
	$holder->query_safe('BEGIN; SELECT v FROM t WHERE id = 1 FOR UPDATE;');
	my $mark = send_async($sess, 'UPDATE t SET v = v + 1 WHERE id = 1;');
	ok( $node->poll_query_until(
			'postgres',
			"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid"),
		'the UPDATE waits for the row lock');
	usleep(1_000_000);
	$holder->query_safe('COMMIT');
	isnt(wait_async($sess, $mark), undef, 'the UPDATE is done');
	$compare->('row lock', 'UPDATE t SET v = v + $1 WHERE id = $2', $pid);
	$holder->quit;
	$sess->quit;
	$node->stop;
}

done_testing();
