# Bounded pending memory.
#
# One top-level statement (a call of a PL/pgSQL function) runs 100,000
# distinct nested statements with pgss_ng.track = all.  pgss_ng keeps its
# backend-local pending counters in a dynahash (memory context "pgss_ng
# pending") and flushes early once 256 entries are pending,
# so, read from inside that same statement, the context must stay small
# instead of growing with the number of distinct statements.  Afterwards
# every one of the 100,000 statements must be in pgss_ng exactly once as a
# nested entry with calls = 1 and rows = 1, with nothing dropped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $nstmts = 100_000;

my $node = pgss_node(
	'pending_bound',
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.max' => 200000);

# A one-row table of 100 columns: "SELECT cI, cJ, cK FROM w" for distinct
# (I, J, K) have distinct query ids (they differ in structure, not in
# constants, which normalization would remove); there are C(100,3) =
# 161,700 such triples, enough for 100,000 statements.
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION pgss_ng;
SELECT format('CREATE TABLE w (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, 100) i \\gexec
INSERT INTO w SELECT * FROM jsonb_populate_record(NULL::w, '{}');

-- The first n triples I < J < K in lexicographic order.
CREATE FUNCTION triples(n int, OUT i int, OUT j int, OUT k int)
RETURNS SETOF record LANGUAGE sql AS \$\$
  SELECT i, j, k
  FROM generate_series(1, 98) i, generate_series(i + 1, 99) j,
	   generate_series(j + 1, 100) k
  ORDER BY i, j, k
  LIMIT n
\$\$;

-- Runs the n statements, then returns what this backend's pending hash
-- context holds: "<number of such contexts> <total_bytes>".  A dynahash
-- never gives element memory back to its context, so total_bytes at the
-- end is the peak over the whole run.  The context is named "dynahash"
-- with the table name as ident, but pg_backend_memory_contexts shows
-- dynahash contexts under the table name (ident NULL); accept both.
CREATE FUNCTION run_distinct(n int) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
  r record;
  res text;
BEGIN
  FOR r IN SELECT * FROM triples(n) LOOP
    EXECUTE format('SELECT c%s, c%s, c%s FROM w', r.i, r.j, r.k);
  END LOOP;
  SELECT count(*) || ' ' || coalesce(sum(total_bytes), 0) INTO res
  FROM pg_backend_memory_contexts
  WHERE name = 'pgss_ng pending'
     OR (name = 'dynahash' AND ident = 'pgss_ng pending');
  RETURN res;
END
\$\$;
SELECT pgss_ng_reset();
});

my $res = $node->safe_psql('postgres', "SELECT run_distinct($nstmts)");
my ($nctx, $bytes) = split / /, $res;
note("pgss_ng pending context after $nstmts distinct statements: "
	  . "$bytes bytes");

is($nctx, '1', 'the backend has one "pgss_ng pending" dynahash context');

# A pending entry is its key (24 bytes), a header (24 bytes) and the
# counters (about 300 bytes), plus dynahash's element header: some 350
# bytes.  Flushing past 256 pending entries keeps the hash near 256
# elements (~90 kB, plus its bucket directory and allocation slack), while
# keeping all 100,000 would need more than 30 MB.  1 MB separates the two
# by a wide margin either way.
cmp_ok($bytes, '<', 1024 * 1024,
	'pending memory stays below 1 MB through 100,000 distinct statements');
cmp_ok($bytes, '>', 0, 'the pending context was measured');

# Every statement is there once, nested, with one call and one row.
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) || ' ' || count(DISTINCT queryid) || ' ' ||
			   count(*) FILTER (WHERE calls = 1 AND rows = 1)
		FROM pgss_ng
		WHERE NOT toplevel
		  AND query ~ '^SELECT c[0-9]+, c[0-9]+, c[0-9]+ FROM w$'}),
	"$nstmts $nstmts $nstmts",
	"$nstmts nested entries, distinct query ids, each calls = 1, rows = 1");

# Exactly the texts that were run, no more, no fewer.
is( $node->safe_psql(
		'postgres', qq{
		WITH ran AS (
		  SELECT format('SELECT c%s, c%s, c%s FROM w', i, j, k) AS query
		  FROM triples($nstmts)),
		seen AS (
		  SELECT query FROM pgss_ng
		  WHERE NOT toplevel
			AND query ~ '^SELECT c[0-9]+, c[0-9]+, c[0-9]+ FROM w\$')
		SELECT (SELECT count(*) FROM (TABLE ran EXCEPT TABLE seen) a) || ' ' ||
			   (SELECT count(*) FROM (TABLE seen EXCEPT TABLE ran) b)}),
	'0 0',
	'the nested entries are exactly the statements that ran');

# The top-level call and the nested loop query were counted once each.
is( $node->safe_psql(
		'postgres', q{
		SELECT string_agg(toplevel || ' ' || calls || ' ' || query, E'\n'
						  ORDER BY toplevel, query)
		FROM pgss_ng
		WHERE query LIKE 'SELECT * FROM triples(%'
		   OR query LIKE 'SELECT run_distinct(%'}),
	"false 1 SELECT * FROM triples(n)\ntrue 1 SELECT run_distinct(\$1)",
	'the function call and its loop query were counted once');

is($node->safe_psql('postgres', 'SELECT dropped FROM pgss_ng_info'),
	'0', 'pgss_ng_info: nothing dropped');

$node->stop;
done_testing();
