# The eviction log (pgss_ng_evictions, pgss_ng.evicted_log; issue 20,
# item 2).
#
# pgss_ng.max = 100, pgss_ng.evicted_log = 10.  One session of an
# unprivileged role runs 150 distinct statements once each, in order: with
# at most 256 entries eviction ranks them exactly, and as their values
# only differ by age, they are evicted in the order they were made.  Then:
#   - the log holds exactly the last 10 victims, oldest first: the last 10
#     of the statements that have no entry any more, with calls 1, their
#     stats_since and evicted_at in order;
#   - privacy: the role sees its texts and queryids, another unprivileged
#     role sees '<insufficient privilege>' and NULL, a member of
#     pg_read_all_stats sees them;
#   - a full reset empties the log;
#   - a long text is logged as its first 255 bytes at most, cut at a
#     character boundary (UTF8: a 2-byte character across byte 255 goes);
#   - with pgss_ng.evicted_log = 0 (after a restart) nothing is logged
#     while the remainder still counts.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $nlog = 10;
my $nstmt = 150;

my $node = pgss_node(
	'evict_log',
	'pgss_ng.max' => 100,
	'pgss_ng.evicted_log' => $nlog,
	'pgss_ng.track' => 'none',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off',
	_init => { extra => [ '--encoding=UTF8', '--locale=C' ] });

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 40);
for my $r (qw(regress_alice regress_bob regress_reader))
{
	$node->safe_psql('postgres', "CREATE ROLE $r LOGIN");
	$node->safe_psql('postgres', "GRANT SELECT ON w TO $r");
}
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO regress_reader');

# statement k (1-based): distinct by its columns
sub stmt
{
	my ($k) = @_;
	my $i = int(($k - 1) / 40) + 1;
	my $j = ($k - 1) % 40 + 1;
	return "SELECT c$i, c$j FROM w";
}

# Run statements 1 .. $nstmt once each, in order, in one session of alice.
sub fill
{
	my $script = "SET pgss_ng.track = top;\nSET ROLE regress_alice;\n";
	$script .= join('', map { stmt($_) . ";\n" } 1 .. $nstmt);
	$node->safe_psql('postgres', $script);
	return;
}

# The statements of 1 .. $nstmt that have no entry, in order.
sub gone
{
	my %present = map { $_ => 1 } split /\n/,
	  $node->safe_psql('postgres',
		"SELECT query FROM pgss_ng WHERE query LIKE 'SELECT c%, c% FROM w'");
	return grep { !$present{ stmt($_) } } 1 .. $nstmt;
}

$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');
fill();
my @gone = gone();
cmp_ok(scalar(@gone), '>', $nlog, scalar(@gone) . " statements evicted, more than $nlog");
my @want = map { stmt($_) } @gone[ -$nlog .. -1 ];

# --- the last 10 victims, oldest first ---
my $log_sql = q{SELECT string_agg(query, E'\n' ORDER BY ord)
	FROM pgss_ng_evictions() WITH ORDINALITY AS l(userid, dbid, toplevel,
	  queryid, query, calls, total_exec_time, stats_since, evicted_at, ord)};
is($node->safe_psql('postgres', $log_sql), join("\n", @want),
	"the log holds the last $nlog victims, in the order they were evicted");
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*), bool_and(calls = 1), bool_and(total_exec_time >= 0),
	       bool_and(userid = 'regress_alice'::regrole), bool_and(toplevel),
	       bool_and(stats_since <= evicted_at)
	FROM pgss_ng_evictions}),
	"$nlog|t|t|t|t|t",
	'each logged entry: calls 1, alice\'s, top level, made before evicted');
is( $node->safe_psql(
		'postgres', q{
	SELECT bool_and(evicted_at >= prev_at) AND bool_and(stats_since >= prev_since)
	FROM (SELECT evicted_at, stats_since,
	             lag(evicted_at) OVER (ORDER BY ord) AS prev_at,
	             lag(stats_since) OVER (ORDER BY ord) AS prev_since
	      FROM pgss_ng_evictions() WITH ORDINALITY AS l(userid, dbid, toplevel,
	        queryid, query, calls, total_exec_time, stats_since, evicted_at, ord)) x
	WHERE prev_at IS NOT NULL}),
	't', 'evicted_at and stats_since never go back along the log');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM pgss_ng_evictions e
		  WHERE EXISTS (SELECT FROM pgss_ng p WHERE p.queryid = e.queryid)}),
	'0',
	'no logged entry is still in pgss_ng');

# --- privacy ---
is( $node->safe_psql(
		'postgres',
		"SET ROLE regress_alice; SELECT count(*) FILTER (WHERE queryid IS NOT NULL AND query LIKE 'SELECT c%') FROM pgss_ng_evictions"),
	$nlog,
	'alice sees her own queryids and texts');
is( $node->safe_psql(
		'postgres',
		"SET ROLE regress_bob; SELECT count(*) FILTER (WHERE queryid IS NULL AND query = '<insufficient privilege>') FROM pgss_ng_evictions"),
	$nlog,
	'bob sees alice\'s rows without queryid or text');
is( $node->safe_psql(
		'postgres',
		"SET ROLE regress_reader; SELECT count(*) FILTER (WHERE queryid IS NOT NULL AND query LIKE 'SELECT c%') FROM pgss_ng_evictions"),
	$nlog,
	'a member of pg_read_all_stats sees them');

# --- a full reset empties it ---
$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pgss_ng_evictions'),
	'0', 'a full reset empties the log');

# --- a long text: at most 255 bytes of it, cut at a character boundary ---
# 26 ASCII bytes, then 2-byte characters (U+00E9): byte 255 would split
# one, so the log keeps 26 + 2 * 114 = 254 bytes; after 27 ASCII bytes
# the 114th ends at byte 255, and all 255 are kept.  Both statements are
# older than the 100 after them at max 100: among the first run's
# victims.
{
	local $ENV{PGCLIENTENCODING} = 'UTF8';
	my %head = (c39 => 'SELECT c40, c39 FROM w /* ', c38 => 'SELECT c40, c38 FROM w /** ');
	$node->safe_psql('postgres',
		"SET pgss_ng.track = top;\nSET ROLE regress_alice;\n"
		  . join('', map { $head{$_} . ("\xc3\xa9" x 200) . " */;\n" } sort keys %head)
		  . join('', map { stmt($_) . ";\n" } 1 .. 100));
	for my $c (sort keys %head)
	{
		is( $node->safe_psql(
				'postgres',
				qq{SELECT query FROM pgss_ng_evictions() WITH ORDINALITY AS l(userid, dbid,
				    toplevel, queryid, query, calls, total_exec_time, stats_since,
				    evicted_at, ord) WHERE query LIKE 'SELECT c40, $c %'}),
			$head{$c} . ("\xc3\xa9" x 114),
			'a long text: its first ' . (length($head{$c}) + 228) . ' bytes, whole characters');
	}
	$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');
}

# --- pgss_ng.evicted_log = 0: off ---
$node->append_conf('postgresql.conf', 'pgss_ng.evicted_log = 0');
$node->restart;
fill();
is($node->safe_psql('postgres', 'SELECT count(*) FROM pgss_ng_evictions'),
	'0', 'evicted_log = 0: nothing is logged');
cmp_ok($node->safe_psql('postgres', 'SELECT sum(entries) FROM pgss_ng_evicted'),
	'>', 0, 'evicted_log = 0: the remainder still counts the evicted entries');

$node->stop;
done_testing();
