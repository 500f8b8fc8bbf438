# The time histograms take memory as they are used (hist_store.c), and
# pgss_ng_info counts what the entries, texts and histograms take.
#
# - Statements A (1 call), B (2 calls) and C (3 calls), with
#   track_planning: A and B keep no histogram memory (hist_bytes stays 0:
#   a histogram of up to two calls is its phase's min and max), yet their
#   histograms are exact: A's one row holds its one call, in the bucket of
#   min_exec_time = max_exec_time; B's rows hold 2 calls, in the buckets of
#   min_exec_time and max_exec_time, and its quantiles are those exactly
#   (p50 = min, p90 .. p999 = max; nearest rank of 2 calls), the planning
#   ones likewise.  C's third call makes a chunk (hist_bytes > 0): its
#   histograms hold 3 calls each, the lowest bucket min's, the highest
#   max's.  A statement run 60 times: its histograms hold 60 calls each.
# - entry_bytes is the same amount per entry at 3 entries and at 4 (bodies
#   and hash elements; entries = entries_allocated), under 1 kB each (the
#   histograms are not in the body); qtext_allocated_bytes >= qtext_bytes
#   > 0, NULL for a role without pg_read_all_stats.
# - A min/max reset frees the chunks (hist_bytes 0), keeps the calls and
#   empties the histograms (quantiles NULL); one more call of C: its
#   histogram holds that call alone, still without a chunk.
# - A clean restart keeps every histogram exactly (both phases, chunk or
#   not), and the quantiles; a full reset leaves entry_bytes,
#   qtext_allocated_bytes and hist_bytes at 0, and hist_dropped 0.
# - pgss_ng 1.0 with pgss_ng_compat 1.0 (whose pg_stat_statements_info
#   depends on pgss_ng_info()) updates to 1.1: pgss_ng_info then has the
#   columns of a fresh 1.1, and pg_stat_statements_info still reads.
#
# The test's own reads are untracked (pgss_ng.track = none).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'hist_memory',
	'pgss_ng.track' => 'top',
	'pgss_ng.track_planning' => 'on',
	'pgss_ng.save' => 'on',
	'pgss_ng.max' => 1000);
untracked_psql($node, 'CREATE EXTENSION pgss_ng; CREATE TABLE t (x int)');

sub uq { return untracked_psql($node, $_[0]); }

# the statements, in one tracked session
sub run_tracked
{
	my ($sql) = @_;
	$node->safe_psql('postgres', $sql);
}

my %stmt = (
	A => 'SELECT x FROM t',
	B => 'SELECT x, x FROM t',
	C => 'SELECT x, x, x FROM t',
	D => 'SELECT count(*) FROM t');

# "<exec rows>/<plan rows>" of statement $s's histograms, each row
# "lower:upper:count"
sub hists
{
	my ($s) = @_;
	my @part = map {
		qq{coalesce((SELECT string_agg(h.lower_ms || ':' || h.upper_ms || ':' || h.count,
		                               ' ' ORDER BY h.lower_ms)
		             FROM pgss_ng p,
		                  pgss_ng_${_}_time_histogram(p.userid, p.dbid, p.queryid,
		                                              p.toplevel) h
		             WHERE p.query = '$stmt{$s}'), '')}
	} ('exec', 'plan');
	return "SELECT $part[0] || '/' || $part[1]";
}

# "<calls in the histogram> of <calls>|<min in the lowest bucket>|<max in
# the highest bucket>" for a phase ('exec', 'plan') of statement $s
sub hist_check
{
	my ($s, $ph) = @_;
	my $calls = $ph eq 'exec' ? 'calls' : 'plans';
	return qq{
	  SELECT sum(h.count) || ' of ' || min(p.$calls) || '|' ||
	         ((array_agg(h.lower_ms ORDER BY h.lower_ms))[1] <= min(p.min_${ph}_time) AND
	          min(p.min_${ph}_time) < (array_agg(h.upper_ms ORDER BY h.lower_ms))[1]) || '|' ||
	         ((array_agg(h.lower_ms ORDER BY h.lower_ms DESC))[1] <= max(p.max_${ph}_time) AND
	          max(p.max_${ph}_time) < (array_agg(h.upper_ms ORDER BY h.lower_ms DESC))[1])
	  FROM pgss_ng p,
	       pgss_ng_${ph}_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
	  WHERE p.query = '$stmt{$s}'};
}

sub info
{
	return uq('SELECT ' . $_[0] . ' FROM pgss_ng_info');
}

uq('SELECT pgss_ng_reset()');
is(info('entries, entry_bytes, qtext_allocated_bytes, hist_bytes, hist_dropped'),
	'0|0|0|0|0', 'after a full reset: nothing, and no memory counted');

run_tracked("$stmt{A}; $stmt{B}; $stmt{B};");
is(info('entries || \' \' || hist_bytes'), '2 0', 'A (1 call) and B (2 calls): no histogram memory');
for my $s ('A', 'B')
{
	for my $ph ('exec', 'plan')
	{
		my $n = $s eq 'A' ? 1 : 2;
		is(uq(hist_check($s, $ph)), "$n of $n|true|true",
			"$s: the $ph histogram holds $n calls, in the buckets of min and max");
	}
}
is( uq(qq(
	SELECT bool_and(exec_time_p50 = min_exec_time AND exec_time_p90 = max_exec_time
	                AND exec_time_p999 = max_exec_time
	                AND plan_time_p50 = min_plan_time AND plan_time_p99 = max_plan_time)
	FROM pgss_ng_detail WHERE query IN ('$stmt{A}', '$stmt{B}'))),
	't', 'A, B: quantiles are min (p50) and max (p90 .. p999) exactly');
is(uq(qq(SELECT count(*) FROM pgss_ng p, pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
	WHERE p.query = '$stmt{A}')), '1', 'A: one bucket');

my ($e2, $eb2) = split /\|/, info('entries, entry_bytes');
my $per_entry = $eb2 / $e2;

run_tracked("$stmt{C}; $stmt{C}; $stmt{C};");
ok(info('hist_bytes') > 0, 'C (3 calls): a histogram chunk');
for my $ph ('exec', 'plan')
{
	is(uq(hist_check('C', $ph)), '3 of 3|true|true',
		"C: the $ph histogram holds 3 calls, min's bucket lowest, max's highest");
}
my ($e3, $ea3, $eb3, $qb3, $qa3) = split /\|/,
  info('entries, entries_allocated, entry_bytes, qtext_bytes, qtext_allocated_bytes');
is("$e3 $ea3", '3 3', 'three entries, three bodies');
is($eb3, 3 * $per_entry, "entry_bytes: $per_entry per entry at 2 entries and at 3");
cmp_ok($per_entry, '<', 1024, 'an entry takes less than 1 kB (no histogram in its body)');
ok($qb3 > 0 && $qa3 >= $qb3, "qtext_allocated_bytes ($qa3) >= qtext_bytes ($qb3) > 0");

run_tracked(join('', ("$stmt{D};") x 60));
for my $ph ('exec', 'plan')
{
	is(uq(hist_check('D', $ph)), '60 of 60|true|true', "D (60 calls): the $ph histogram holds every call");
}
is(info('entry_bytes'), 4 * $per_entry, 'entry_bytes at 4 entries: the same per entry');
is(info('hist_dropped'), '0', 'no time dropped from a histogram');

# privileges: qtext_allocated_bytes as qtext_bytes
uq('CREATE ROLE hist_mem_user LOGIN');
# (tracked: the role may not turn tracking off; its entry is not one of A .. D)
is( $node->safe_psql(
		'postgres',
		'SELECT qtext_bytes IS NULL AND qtext_allocated_bytes IS NULL '
		  . 'AND entry_bytes > 0 AND hist_bytes > 0 FROM pgss_ng_info',
		extra_params => [ '-U', 'hist_mem_user' ]),
	't', 'a role without pg_read_all_stats: the texts\' bytes NULL, the others shown');

# min/max reset
uq('SELECT pgss_ng_reset(0, 0, 0, true)');
is(info('hist_bytes'), '0', 'min/max reset: the chunks freed');
is( uq(qq(SELECT string_agg(calls || ':' || coalesce(exec_time_p50::text, 'null'), ' ' ORDER BY calls)
	FROM pgss_ng_detail WHERE query IN ('$stmt{A}', '$stmt{B}', '$stmt{C}', '$stmt{D}'))),
	'1:null 2:null 3:null 60:null', 'min/max reset: calls kept, quantiles NULL');
run_tracked($stmt{C});
is(uq(hist_check('C', 'exec')), '1 of 4|true|true', 'C once more: its histogram holds that call');
is(info('hist_bytes'), '0', '... without a chunk');

# a clean restart keeps the histograms
run_tracked(join('', ("$stmt{D};") x 10) . "$stmt{B}; $stmt{B}; $stmt{A};");
my %before = map { $_ => uq(hists($_)) } keys %stmt;
my $quantiles = 'SELECT * FROM pgss_ng_detail ORDER BY queryid';
waits_added($node);    # the wait samples of what ran are in before the read
my $q_before = uq($quantiles);
my $pos = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
is(uq(hists($_)), $before{$_}, "restart: the histograms of $_ as they were")
  for sort keys %stmt;
is(uq($quantiles), $q_before, 'restart: pgss_ng_detail as it was');
ok(info('hist_bytes') > 0, 'restart: the chunks made again');

uq('SELECT pgss_ng_reset()');
is(info('entries, entry_bytes, qtext_allocated_bytes, hist_bytes, hist_dropped'),
	'0|0|0|0|0', 'full reset: no memory counted');

# 1.0 with pgss_ng_compat 1.0, updated to 1.1
uq('CREATE DATABASE upd');
my $cols = q{SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
	WHERE attrelid = 'pgss_ng_info'::regclass AND attnum > 0};
my $fresh = uq($cols);
local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
$node->safe_psql('upd',
	"CREATE EXTENSION pgss_ng VERSION '1.0'; CREATE EXTENSION pgss_ng_compat VERSION '1.0'; "
	  . "ALTER EXTENSION pgss_ng UPDATE TO '1.1'");
is($node->safe_psql('upd', $cols), $fresh, '1.0 updated to 1.1: pgss_ng_info has the columns of a fresh 1.1');
like($fresh, qr/^dealloc,.*,last_eviction,entry_bytes,qtext_allocated_bytes,hist_bytes,hist_dropped(,|$)/,
	'... appended after 1.0\'s columns');
is($node->safe_psql('upd', 'SELECT count(*) FROM pg_stat_statements_info'),
	'1', 'pgss_ng_compat 1.0 reads pgss_ng_info() still');

$node->stop;
done_testing();
