# An ERROR in the init callback of a new entry (design.md "Error
# containment": creation gives the body back) reaches neither the user
# nor the shared counts.
#
# The init callback (stmt_init) stores the entry's text; the text hash's
# dshash_find_or_insert() allocates its item without DSA_ALLOC_NO_OOM, so
# an allocation failure there raises an ERROR inside the callback.  gdb
# makes exactly that allocation fail: backend A, making the entry of a
# new statement N, is stopped in pgss_ng_qtext_store (called by
# stmt_init), then at the first instruction of the next
# dsa_allocate_extended (called inside dshash_find_or_insert), whose size
# argument gdb sets to 2^64 - 256: DSA raises "invalid DSA memory alloc
# request size" before it touches anything.  Then:
# - A's statement succeeds, nothing on its stderr;
# - the server log has one "pgss_ng could not record a statement:
#   invalid DSA memory alloc request size ..." line, at LOG;
# - the execution counts in dropped (+1); no entry was made, and the body
#   was given back: entries, entries_allocated, qtext_count and
#   qtext_bytes are as before;
# - A runs N again: it is recorded with 1 call and its text (the text
#   hash's partition lock was released: nothing waits).
# Needs gdb and permission to ptrace a backend, and an x86-64 or aarch64
# machine (the size argument is set in its register): otherwise the whole
# file is skipped, saying why.
use strict;
use warnings;

use POSIX qw(uname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

# the register holding the second argument of a call, at its first
# instruction
my %size_reg = (x86_64 => '$rsi', aarch64 => '$x1');
my $reg = $size_reg{ (uname())[4] };
plan skip_all => 'the size argument is set in a register of x86-64 or aarch64, not '
  . (uname())[4]
  unless defined $reg;

my $node = pgss_node(
	'init_callback',
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.save' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng; CREATE TABLE t1 (x int)');

my $sess_a = $node->background_psql('postgres');
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
$sess_a->set_query_timer_restart;
gdb_usable_or_skip($apid,
	qw(pgss_ng_qtext_store stmt_init dsa_allocate_extended));

sub info
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres',
		'SELECT entries, entries_allocated, qtext_count, qtext_bytes, dropped
		 FROM pgss_ng_info');
}

# A is attached, and so is the text hash (made by the first text stored).
$sess_a->query_safe('SELECT count(*) FROM t1');
my ($e0, $a0, $c0, $b0, $d0) = split /\|/, info();
is($a0, $e0, 'before: entries_allocated = entries');

my $n_sql = 'SELECT x, x FROM t1';
my $pos = -s $node->logfile;
my ($g, $am);
SCENARIO:
{
	($g, $am) = gdb_stop_at('init', $apid, 'pgss_ng_qtext_store',
		'pgss_ng_qtext_store', $sess_a, "$n_sql;");
	last SCENARIO unless defined $g;
	like(gdb_bt($g), qr/#1 .*stmt_init/, 'called by the init callback');
	stop_next($g, 'init', '*dsa_allocate_extended', 'dsa_allocate_extended',
		qr/dshash_find_or_insert.*pgss_ng_qtext_store/s,
		'allocating in the text hash, inside pgss_ng_qtext_store')
	  or last SCENARIO;
	gdb_send($g, "set $reg = 0xffffffffffffff00", "print/x $reg",
		'echo @@set@@\n');
	ok(defined gdb_wait($g, qr/0xffffffffffffff00\n.*\@\@set\@\@/s),
		'the requested size is now 2^64 - 256');
}
gdb_release($g);
is(wait_async($sess_a, $am), '', 'A\'s statement succeeded');
is($sess_a->{stderr}, '', 'nothing reached A\'s client');

my @lines = grep { /pgss_ng could not/ } split /\n/,
  slurp_file($node->logfile, $pos);
is(scalar(@lines), 1, 'one "pgss_ng could not" line in the log');
like($lines[0] // '',
	qr/ LOG:  pgss_ng could not record a statement: invalid DSA memory alloc request size 18446744073709551360$/,
	'at LOG: the ERROR of the init callback, contained');

is(info(), join('|', $e0, $e0, $c0, $b0, $d0 + 1),
	'no entry made, its body and text given back, the execution dropped');

$sess_a->query_safe($n_sql);
is( $node->safe_psql(
		'postgres', "SELECT calls FROM pgss_ng WHERE query = '$n_sql'"),
	'1',
	'N run again: recorded with its text, one call');
$sess_a->quit;
is( $node->safe_psql(
		'postgres', 'SELECT entries = entries_allocated FROM pgss_ng_info'),
	't', 'entries_allocated = entries at the end');

$node->stop;
done_testing();
