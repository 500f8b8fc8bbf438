# A histogram chunk that cannot be allocated (hist_store.c: DSA_ALLOC_NO_OOM
# returns nothing when shared memory is short) loses no call: the call is
# counted, its min/max/sum kept, and pgss_ng_info.hist_dropped says how
# many times were not kept in a histogram.
#
# Backend A runs statement S twice (a histogram of two calls needs no
# chunk), then a third time: gdb stops A in pgss_ng_hist_store_merge, then
# at the first instruction of the dsa_allocate_extended it calls (the
# chunk for S's three calls), lets the allocation run to its end and
# makes it return InvalidDsaPointer (0), as a failed DSA_ALLOC_NO_OOM
# allocation does (the chunk it did allocate is left behind: the test's
# doing).  Then:
# - A's statement succeeds, nothing on its stderr, nothing logged;
# - S has 3 calls, its min and max, no exec quantiles (NULL) and no
#   histogram rows: its histogram is lost; hist_dropped = 3 (the two
#   calls it held and the third), hist_bytes = 0;
# - a fourth call: 4 calls, still no quantiles, hist_dropped = 4.
# Then an ERROR while a chunk is allocated (a DSM segment that cannot be
# made) changes nothing: statement T run twice, then a third time, stopped
# the same way at its chunk's dsa_allocate_extended, whose size argument
# gdb sets to 2^64 - 256 (DSA raises "invalid DSA memory alloc request
# size" before it allocates anything).  A's statement succeeds; recording
# T's third call is logged as failed, once, and that call counts in
# dropped, nothing of it in T (the histogram is counted first, before any
# other counter of the entry); A's next statement (T again) is counted: T
# has 3 calls and a histogram of exactly 3, nothing more dropped from a
# histogram.  Then:
# - a clean restart keeps S lost (the stats file says so): no quantiles,
#   no histogram rows, calls and min/max as they were; one more call
#   counts in hist_dropped (1: it starts at 0 with the server);
# - a min/max reset ends it: three more calls, their quantiles and a
#   histogram of 3 calls; hist_dropped unchanged.
# Needs gdb and permission to ptrace a backend, and an x86-64 or aarch64
# machine (the return value and the size are set in registers): otherwise
# the whole file is skipped, saying why.
use strict;
use warnings;

use POSIX qw(uname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

# the registers holding a function's return value, and the second
# argument of a call at its first instruction
my %ret_reg = (x86_64 => '$rax', aarch64 => '$x0');
my %size_reg = (x86_64 => '$rsi', aarch64 => '$x1');
my $reg = $ret_reg{ (uname())[4] };
my $sreg = $size_reg{ (uname())[4] };
plan skip_all => 'the registers set are those of x86-64 or aarch64, not '
  . (uname())[4]
  unless defined $reg;

my $node = pgss_node(
	'hist_alloc',
	'pgss_ng.track' => 'top',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on');
untracked_psql($node, 'CREATE EXTENSION pgss_ng; CREATE TABLE t1 (x int)');

my $sess_a = $node->background_psql('postgres');
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
$sess_a->set_query_timer_restart;
gdb_usable_or_skip($apid, qw(pgss_ng_hist_store_merge dsa_allocate_extended));

my $s_sql = 'SELECT x, x FROM t1';

# "calls|min and max set|exec quantiles|histogram rows" of S
sub s_state
{
	return untracked_psql(
		$node, qq{
		SELECT calls || '|' || (min_exec_time > 0 AND max_exec_time >= min_exec_time) || '|' ||
		       coalesce(exec_time_p50::text, 'null') || '|' ||
		       (SELECT count(*) FROM pgss_ng_exec_time_histogram(userid, dbid, queryid, toplevel))
		FROM pgss_ng_detail WHERE query = '$s_sql'});
}

sub info
{
	return untracked_psql($node, 'SELECT hist_dropped, hist_bytes FROM pgss_ng_info');
}

$sess_a->query_safe($s_sql) for 1 .. 2;
like(s_state(), qr/^2\|true\|[0-9.e-]+\|[12]$/, 'S twice: its quantiles and histogram');
is(info(), '0|0', 'S twice: nothing dropped, no chunk');

# stop_at_chunk($name, $sql)
#	Send $sql to A and stop A at the first instruction of the
#	dsa_allocate_extended of the chunk its flush makes (a few tests,
#	named after scenario $name).  Returns (the gdb handle, undef if A did
#	not stop there; the marker of $sql).
sub stop_at_chunk
{
	my ($name, $sql) = @_;
	my ($g, $am) = gdb_stop_at($name, $apid, 'pgss_ng_hist_store_merge',
		'pgss_ng_hist_store_merge', $sess_a, "$sql;");
	return (undef, $am) unless defined $g;
	return ($g, $am)
	  if stop_next($g, $name, '*dsa_allocate_extended', 'dsa_allocate_extended',
		qr/#1 .*pgss_ng_hist_store_merge/, 'allocating the histograms\' chunk');
	gdb_release($g);
	return (undef, $am);
}

my $pos = -s $node->logfile;
my ($g, $am) = stop_at_chunk('alloc', $s_sql);
if (defined $g)
{
	gdb_send($g, 'finish');
	ok(defined gdb_wait($g, qr/Run till exit.*\n.*in pgss_ng_hist_store_merge/s),
		'the allocation ran to its end');
	gdb_send($g, "set $reg = 0", "print/x $reg", 'echo @@set@@\n');
	ok(defined gdb_wait($g, qr/= 0x0\n.*\@\@set\@\@/s),
		'it returns InvalidDsaPointer');
}
gdb_release($g);
is(wait_async($sess_a, $am), '', 'A\'s statement succeeded');
is($sess_a->{stderr}, '', 'nothing reached A\'s client');
is(scalar(grep { /pgss_ng could not/ } split /\n/, slurp_file($node->logfile, $pos)),
	0, 'nothing logged');

is(s_state(), '3|true|null|0', 'S: 3 calls, min and max, no quantiles, no histogram');
is(info(), '3|0', 'hist_dropped 3 (the two calls the histogram held, and the third)');

$sess_a->query_safe($s_sql);
is(s_state(), '4|true|null|0', 'a fourth call: counted, the histogram still lost');
is(info(), '4|0', 'hist_dropped 4');

# an ERROR while allocating the chunk
my $t_sql = 'SELECT x, x, x FROM t1';
$sess_a->query_safe($t_sql) for 1 .. 2;
my $dropped0 = untracked_psql($node, 'SELECT dropped FROM pgss_ng_info');
$pos = -s $node->logfile;
($g, $am) = stop_at_chunk('error', $t_sql);
if (defined $g)
{
	gdb_send($g, "set $sreg = 0xffffffffffffff00", "print/x $sreg",
		'echo @@set@@\n');
	ok(defined gdb_wait($g, qr/0xffffffffffffff00\n.*\@\@set\@\@/s),
		'error: the requested size is now 2^64 - 256');
}
gdb_release($g);
is(wait_async($sess_a, $am), '', 'error: A\'s statement succeeded');
is($sess_a->{stderr}, '', 'error: nothing reached A\'s client');
my @lines = grep { /pgss_ng could not/ } split /\n/, slurp_file($node->logfile, $pos);
is(scalar(@lines), 1, 'error: one "pgss_ng could not" line in the log');
like($lines[0] // '', qr/ LOG:  pgss_ng could not .*invalid DSA memory alloc request size 18446744073709551360$/,
	'error: at LOG, the allocation\'s ERROR, contained');
is(untracked_psql($node, 'SELECT dropped FROM pgss_ng_info'),
	$dropped0 + 1, 'error: the call counted in dropped');
$sess_a->query_safe($t_sql);
is( untracked_psql(
		$node, qq{SELECT p.calls || ' ' || sum(h.count) FROM pgss_ng p,
		pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
		WHERE p.query = '$t_sql' GROUP BY p.calls}),
	'3 3', 'error: T has 3 calls, and a histogram of exactly 3');
my ($d4, $b4) = split /\|/, info();
ok($d4 == 4 && $b4 > 0, 'error: nothing more dropped, a chunk');
$sess_a->quit;

$pos = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
is(s_state(), '4|true|null|0', 'restart: S still lost');
$node->safe_psql('postgres', $s_sql);
is( untracked_psql($node, 'SELECT hist_dropped FROM pgss_ng_info'),
	'1', 'restart: one more call dropped from the histogram');

untracked_psql($node, 'SELECT pgss_ng_reset(0, 0, 0, true)');
$node->safe_psql('postgres', "$s_sql; $s_sql; $s_sql;");
like(s_state(), qr/^8\|true\|[0-9.e-]+\|[1-3]$/, 'after a min/max reset: quantiles again');
is( untracked_psql(
		$node, qq{SELECT sum(h.count) FROM pgss_ng p,
		pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid, p.toplevel) h
		WHERE p.query = '$s_sql'}),
	'3', '... and a histogram of its 3 calls');
my ($dropped, $bytes) = split /\|/, info();
ok($dropped == 1 && $bytes > 0, 'hist_dropped unchanged, a chunk');

$node->stop;
done_testing();
