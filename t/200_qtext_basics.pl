# The query text arena (pgss_ng.query_text_memory), deduplication, and
# lowering pgss_ng.max with a reload.
#
# With query_text_memory at its minimum (256kB):
#   - pgss_ng_info reports the cap (qtext_limit_bytes = 262144);
#   - UTF-8 texts, normalized or not, read back byte for byte;
#   - the same normalized statement run by two roles in two databases makes
#     four entries but stores one text (qtext_count + 1), and the arena's
#     bytes are the stored texts plus one fixed header each;
#   - a 1 MB statement (a long comment) runs, is counted (calls exact), and
#     gets query NULL with qtext_dropped + 1;
#   - 600 long distinct statements ("SELECT c1, c1, ..., c1 FROM w", N
#     columns, N = 1 .. 600, about 720 kB of text), each run twice, are
#     more than the arena holds: qtext_bytes, sampled after every statement
#     pair, never exceeds the cap and reaches the eviction mark (1/8 of
#     the cap kept free); no text was dropped: room was made by evicting
#     entries (counted in entries_evicted, their runs in dealloc); every
#     one of the 600 entries left has
#     calls = 2 and its exact text (none NULL);
#   - qtext_count always equals the number of distinct texts in the view;
#   - a full reset frees every text (only the reset statement's own
#     remains);
#   - lowering pgss_ng.max from 5000 to 100 with a reload while ~1000
#     entries exist, then running only new statements (each in a new
#     session): entries come down to <= 100, the new statements are
#     recorded, and the evicted entries' texts are freed.
# The server must stay up without any ERROR in its log.
use strict;
use warnings;
use utf8;

use Encode qw(encode decode);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $limit = 256 * 1024;

my $node = start_small_arena_node('qtext',
	_init => { extra => [ '--encoding=UTF8', '--locale=C' ] });

# Run SQL given as a Perl character string; return the output decoded.
sub psql_utf8
{
	my ($db, $sql, @extra) = @_;
	my $out = $node->safe_psql($db, encode('UTF-8', $sql), @extra);
	return decode('UTF-8', $out, Encode::FB_CROAK);
}

# Arena against view: "<qtext_count>|<distinct texts>|<qtext_bytes>|<their
# octet_length sum>".  No constant in it, so it makes no entry (with a
# text) before it runs; its own entry is made after it read everything.
my $arena_sql = q{
SELECT i.qtext_count, d.n, i.qtext_bytes, d.len
FROM pgss_ng_info i,
	 (SELECT count(*) AS n, sum(octet_length(q)) AS len
	  FROM (SELECT DISTINCT query AS q FROM pgss_ng
			WHERE query IS NOT NULL) s) d};

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE samples (b bigint, l bigint);
CREATE TABLE big_t (big_probe int);
CREATE TABLE dedup_t (dedup_probe int);
GRANT SELECT ON dedup_t TO PUBLIC;
CREATE TABLE "表" ("列名" int, "😀" int);
CREATE ROLE r2 LOGIN;
CREATE DATABASE db2;
});
create_wide_table($node, 'w', 100);
$node->safe_psql('db2', q{
CREATE TABLE dedup_t (dedup_probe int);
GRANT SELECT ON dedup_t TO PUBLIC;
});

is( $node->safe_psql(
		'postgres', 'SELECT qtext_limit_bytes, entries_max FROM pgss_ng_info'),
	"$limit|5000",
	'pgss_ng_info: qtext_limit_bytes = 256kB, entries_max = 5000');

# --- UTF-8 -----------------------------------------------------------------

# Normalized (made at parse analysis) and verbatim (no constant).  Test
# names stay ASCII (the test output handles are not UTF-8).
my @utf8 = (
	[
		'normalized',
		q{SELECT 'é' AS "列名", 'ß', '😀'},
		q{SELECT $1 AS "列名", $2, $3}
	],
	[
		'verbatim',
		q{SELECT "列名", "😀" FROM "表" /* ünïcödé */},
		q{SELECT "列名", "😀" FROM "表" /* ünïcödé */}
	],);
for my $u (@utf8)
{
	my ($label, $stmt, $want) = @$u;
	psql_utf8('postgres', "$stmt;");
	my $wantq = $want =~ s/'/''/gr;
	is( psql_utf8(
			'postgres', qq{
			SELECT count(*) || ' ' || sum(calls) || ' ' ||
				   bool_and(convert_to(query, 'UTF8') =
							'\\x@{[ unpack('H*', encode('UTF-8', $want)) ]}'::bytea)
			FROM pgss_ng WHERE query = '$wantq'}),
		'1 1 true',
		"UTF-8 text stored byte for byte ($label)");
	my $got =
	  psql_utf8('postgres', qq{SELECT query FROM pgss_ng WHERE query = '$wantq'});
	ok($got eq $want, "UTF-8 text reads back exactly ($label)")
	  or diag('got (UTF-8 hex): ' . unpack('H*', encode('UTF-8', $got)));
}

# --- deduplication ----------------------------------------------------------

my $count_sql = 'SELECT qtext_count, qtext_bytes FROM pgss_ng_info';
$node->safe_psql('postgres', $count_sql);    # its own entry and text
my ($count0, $bytes0) = split /\|/, $node->safe_psql('postgres', $count_sql);
for my $db ('postgres', 'db2')
{
	for my $role ('postgres', 'r2')
	{
		$node->safe_psql($db, 'SELECT dedup_probe + 1 FROM dedup_t',
			extra_params => [ '-U', $role ]);
	}
}
my ($count1, $bytes1) = split /\|/, $node->safe_psql('postgres', $count_sql);
my $probe = 'SELECT dedup_probe + $1 FROM dedup_t';
is($count1 - $count0, 1, 'four entries of one text store one text');
# Bytes of one stored text beyond its own: a fixed header.
my $hdr = $bytes1 - $bytes0 - length($probe);
ok($hdr > 0 && $hdr <= 64, "one text costs its length plus a header ($hdr)");
is( $node->safe_psql(
		'postgres', qq{
		SELECT count(*) || ' ' || count(DISTINCT userid) || ' ' ||
			   count(DISTINCT dbid) || ' ' || sum(calls)
		FROM pgss_ng WHERE query = '$probe'}),
	'4 2 2 4',
	'four entries (two roles x two databases) with that text');

sub check_arena
{
	my ($what) = @_;
	my ($count, $n, $bytes, $len) = split /\|/,
	  $node->safe_psql('postgres', $arena_sql);
	is($count, $n, "$what: qtext_count = distinct texts in the view ($n)");
	is($bytes, $len + $hdr * $n,
		"$what: qtext_bytes = their lengths + one header each");
	return;
}
check_arena('after dedup');

# --- a 1 MB statement ---------------------------------------------------------

my ($dropped0) = $node->safe_psql('postgres',
	'SELECT qtext_dropped FROM pgss_ng_info');
my $big = 'SELECT /* ' . ('x' x (1024 * 1024)) . ' */ big_probe + 1 FROM big_t';
is($node->safe_psql('postgres', $big), '', '1 MB statement runs');
is($node->safe_psql('postgres', $big), '', '1 MB statement runs again');
# Its query id, with tracking off so that EXPLAIN makes no entry.
my ($big_qid) = $node->safe_psql(
	'postgres', q{
SET pgss_ng.track = none;
EXPLAIN (VERBOSE, COSTS OFF) SELECT big_probe + 1 FROM big_t;
}) =~ /Query Identifier: (-?\d+)/;
ok(defined $big_qid, 'query id of the 1 MB statement');
$big_qid //= 0;
is( $node->safe_psql(
		'postgres',
		"SELECT calls, query IS NULL FROM pgss_ng WHERE queryid = $big_qid"),
	'2|t',
	'1 MB statement counted exactly, text not stored (query NULL)');
is( $node->safe_psql('postgres', 'SELECT qtext_dropped FROM pgss_ng_info'),
	$dropped0 + 1,
	'its text counted once in qtext_dropped');
check_arena('after the 1 MB statement');

# --- overflowing the arena -----------------------------------------------------

my $nlong = 600;
my @long = map { 'SELECT ' . join(', ', ('c1') x $_) . ' FROM w' } 1 .. $nlong;
my $script = '';
for my $s (@long)
{
	$script .= "$s;\n$s;\n"
	  . "INSERT INTO samples SELECT qtext_bytes, qtext_limit_bytes FROM pgss_ng_info;\n";
}
$node->safe_psql('postgres', $script);

my ($nsamples, $maxb, $under) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT count(*), max(b), bool_and(b <= l AND l = 262144) FROM samples');
note("qtext_bytes: max $maxb of $limit over $nsamples samples");
is($nsamples, $nlong, 'one sample after each pair of long statements');
is($under, 't', 'qtext_bytes never exceeded qtext_limit_bytes');
# The longest text is under 2,500 bytes, and eviction keeps 1/8 of the
# cap free: the arena was filled up to that mark.
cmp_ok($maxb, '>', $limit - $limit / 8 - 2500,
	'the arena was filled up to its eviction mark');
is($node->safe_psql('postgres', 'SELECT qtext_dropped FROM pgss_ng_info'),
	$dropped0 + 1, 'no long text was dropped: room was made');
my ($dealloc_long, $evicted_long) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT dealloc, entries_evicted FROM pgss_ng_info');
cmp_ok($dealloc_long, '>', 0, 'eviction ran to make room (dealloc)');
cmp_ok($evicted_long, '>=', $dealloc_long,
	'each run evicted entries (entries_evicted >= dealloc)');

# Their query ids, in order, with tracking off.
my @qid = $node->safe_psql('postgres',
	"SET pgss_ng.track = none;\n"
	  . join('', map { "EXPLAIN (VERBOSE, COSTS OFF) $_;\n" } @long)) =~
  /Query Identifier: (-?\d+)/g;
is(scalar @qid, $nlong, "query ids of the $nlong long statements");

my %row;
for my $r (split /\n/,
	$node->safe_psql('postgres',
		q{SELECT queryid, calls, query IS NULL, query FROM pgss_ng
		  WHERE toplevel}))
{
	my ($qid, $calls, $isnull, $q) = split /\|/, $r, 4;
	$row{$qid} = [ $calls, $isnull, $q ];
}
my ($nnull, $ntext, $ngone, @bad) = (0, 0, 0);
for my $i (0 .. $nlong - 1)
{
	my $r = $row{ $qid[$i] // '' };
	if (!defined $r)
	{
		$ngone++;		# evicted to make room
	}
	elsif ($r->[0] != 2)
	{
		push @bad, "N=" . ($i + 1) . ": calls $r->[0]";
	}
	elsif ($r->[1] eq 't')
	{
		$nnull++;
	}
	elsif ($r->[2] eq $long[$i])
	{
		$ntext++;
	}
	else
	{
		push @bad, "N=" . ($i + 1) . ": text " . substr($r->[2], 0, 60);
	}
}
note("long statements: $ntext with text, $nnull with query NULL, $ngone evicted");
is_deeply(\@bad, [],
	'every long statement left has calls = 2 and its exact text or NULL');
is($nnull, 0, 'no long statement has query NULL');
cmp_ok($ngone, '>', 0, 'some long statements were evicted');
cmp_ok($ngone, '<=', $evicted_long, 'each one counted in entries_evicted');
cmp_ok($ntext, '>', 0, 'some long statements have their text');
check_arena('after overflowing the arena');

# --- a full reset frees every text ----------------------------------------------

# Right after the reset the only entry and text is the reset statement's
# own, made at its end (the reading statement's is made after it reads).
is( $node->safe_psql(
		'postgres', q{
SELECT pgss_ng_reset() IS NOT NULL;
SELECT entries, qtext_count, qtext_bytes, qtext_dropped FROM pgss_ng_info;}),
	"t\n1|1|" . ($hdr + length('SELECT pgss_ng_reset() IS NOT NULL')) . '|0',
	'a full reset frees every text but the reset statement\'s own');
check_arena('after the reset');

# --- lowering pgss_ng.max with a reload ------------------------------------------

$node->safe_psql(
	'postgres', q{
SELECT format('SELECT c%s, c%s FROM w', i, j)
FROM generate_series(1, 50) i, generate_series(1, 20) j \gexec
});
my ($entries0, $evicted0) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT entries, entries_evicted, backstop_skips FROM pgss_ng_info');
cmp_ok($entries0, '>=', 1000, "~1000 entries before lowering max ($entries0)");
check_arena('before lowering max');

$node->safe_psql('postgres',
	'ALTER SYSTEM SET pgss_ng.max = 100; SELECT pg_reload_conf();');
# A backend started after the postmaster reloaded sees max = 100.
ok( $node->poll_query_until(
		'postgres', 'SELECT entries_max FROM pgss_ng_info', '100'),
	'new backends see pgss_ng.max = 100');
# Then only new statements, each in a new session: the first statement end
# must evict down to the new max, and new statements must be recorded.
my @new = map { "SELECT c$_, c@{[$_ + 1]}, c@{[$_ + 2]}, c@{[$_ + 3]} FROM w" }
  1 .. 3;
$node->safe_psql('postgres', $_) for @new;
# This statement ran before: it reads the state the new statements left.
my ($entries1, $evicted1, $skips1) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT entries, entries_evicted, backstop_skips FROM pgss_ng_info');
note("entries $entries0 -> $entries1, entries_evicted $evicted0 -> "
	  . "$evicted1, backstop_skips $skips1");
cmp_ok($entries1, '<=', 100,
	'entries <= 100 after lowering max and running new statements');
cmp_ok($evicted1 - $evicted0, '>=', $entries0 - 100,
	'entries_evicted grew by at least the entries over the new max');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM pgss_ng
		WHERE query LIKE 'SELECT c%, c%, c%, c% FROM w' AND calls = 1}),
	scalar @new,
	'the new statements run after lowering max were recorded');
check_arena('after eviction');

# --- the server is fine ------------------------------------------------------------

stop_and_check_log($node);

done_testing();
