# The statistics file pg_stat/pgss_ng.stat itself.
#
# - Its header: magic "PGNG", format version 10, the server's major, the
#   sizes of the info block and of an entry record, and a trailing CRC-32C
#   of everything before it (checked here independently); each record is
#   that many bytes, then the counts of its histograms' windows (as many
#   as its hist_len says), then its entry's query text (then its rows of
#   wait events and its plan rows); after the records, the evicted
#   remainder: the size of a row, their number (0 here: nothing was
#   evicted) and the rows.
# - Damaged files: truncated to half, one byte flipped in the middle, wrong
#   magic, an older format version (9: whole histograms, no wait samples), an entry
#   record size that is not this build's (a record layout changed without
#   a version bump), an evicted row size that is not this build's, a
#   PostgreSQL major pgss_ng never supported (14) and another
#   supported one (a file carried over by pg_upgrade), empty, shorter
#   than a header, an entry record that is malformed (CRC recomputed so
#   that only the record is wrong), trailing bytes (CRC recomputed).  For
#   each, a start gives exactly one WARNING naming the file and the reason,
#   the server runs, statistics are empty (no row, no entry, no text) and
#   the file is gone.  The undamaged file, put back, is loaded whole.
# - A start with pgss_ng.max (100) below the number of saved entries (320)
#   loads exactly 100, the most valuable first: all 20 hot statements (30
#   calls each) are kept with their calls, the others' calls go to the
#   evicted remainder (one entry each there, each one in entries_evicted,
#   the lot one run in dealloc), and entries stay <= 100 as new
#   statements come.
# - Across 5 clean restarts with the same statements (run again each time)
#   the file size, less the histograms' counts (whose windows may widen),
#   does not change, and pgss_ng_info (dealloc,
#   entries_evicted, eviction_time and last_eviction included, all
#   non-zero) and the evicted remainder (pgss_ng_evicted) survive each
#   one.
#
# Views are read with pgss_ng.track = none, so reading counts nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgssNgTest;

my $node = pgss_node(
	'persistence_file',
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on',
	'pgss_ng.max' => 1000,
	autovacuum => 'off');

my $statfile = $node->data_dir . '/pg_stat/pgss_ng.stat';

sub quiet_psql
{
	my ($sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql);
}

sub snapshot
{
	# the wait samples of what ran are in (they are added once a second)
	waits_added($node);
	return quiet_psql($ALL_ROWS)
	  . "\n"
	  . quiet_psql(
		'SELECT dealloc, entries_evicted, eviction_time, last_eviction, stats_reset, '
		  . 'entries, dropped, entries_max, backstop_skips, qtext_bytes, qtext_count '
		  . 'FROM pgss_ng_info')
	  . "\n"
	  . quiet_psql('SELECT * FROM pgss_ng_evicted ORDER BY userid, dbid, toplevel');
}

# Number of entries the writer logged as restored after log offset $pos.
sub wait_restored
{
	my ($pos) = @_;
	$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
	my @n = slurp_file($node->logfile, $pos) =~ /pgss_ng restored (\d+) statement entries/g;
	is(scalar(@n), 1, 'one "restored" message');
	return $n[0];
}

############################################################################
# A good file.
############################################################################

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE t (a int, b text);
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT count(*) FROM t WHERE a < 10;
SELECT count(*) FROM t WHERE a < 20;
SELECT b FROM t WHERE a = 5;
UPDATE t SET b = b || 'x' WHERE a = 7;
DO $$ BEGIN PERFORM count(*) FROM t; END $$;
SET work_mem = '5MB';
});

waits_added($node);
my $good_rows = quiet_psql($ALL_ROWS);
my $good_entries = quiet_psql('SELECT entries FROM pgss_ng_info');
# The texts of the entries, in hex: each follows one record's fixed part.
my %texts = map { $_ => 1 } split /,/,
  quiet_psql(q{SELECT string_agg(encode(convert_to(query, 'UTF8'), 'hex'), ',') FROM pgss_ng});

ok($good_entries >= 10, "the good file will hold $good_entries entries");

$node->stop('fast');
ok(-f $statfile, 'clean stop writes the file');
my $good = slurp_file($statfile);
my $len = length($good);
my ($magic, $version, $major, $infolen, $recsize) = unpack('L5', $good);
is(sprintf('%08X', $magic), '50474E47', 'header: magic');
is($version, 10, 'header: format version 10');
my $server_major = $node->pg_version->major;
is($major, $server_major, "header: PostgreSQL major version $server_major");
my $nrec = unpack('L', substr($good, 20 + $infolen, 4));
is($nrec, $good_entries, 'header: number of records = entries');
is(unpack('L', substr($good, $len - 4)), crc32c(substr($good, 0, $len - 4)),
	'trailer: CRC-32C of all the bytes before it');

# Where a record's hist_len (two uint16: its histograms' windows) is, in
# PgssNgStmtRecord on 64-bit builds (stmt_saved.h): after the key (24
# bytes), the counters (424), have_minmax, hist_lost and hist_lo (2 x 2
# bytes each).
my $hist_len_at = 24 + 424 + 2 + 2 + 4;

# The bytes of the histograms' counts in the records of file $f.
sub hist_bytes
{
	my ($f) = @_;
	my ($il) = unpack('L', substr($f, 12, 4));
	my $q = 20 + $il + 4;
	my $n = 0;
	for (1 .. unpack('L', substr($f, 20 + $il, 4)))
	{
		my ($h0, $h1) = unpack('S2', substr($f, $q + 4 + $hist_len_at, 4));
		$n += 4 * ($h0 + $h1);
		$q += 4 + unpack('L', substr($f, $q, 4));
	}
	return $n;
}

# Offset of the last record's length word.
my $p = 20 + $infolen + 4;
my $last;
my $short = 0;
my %tails;    # what follows each record's histogram counts (text, waits, plans), in hex
for (1 .. $nrec)
{
	my $reclen = unpack('L', substr($good, $p, 4));
	if ($reclen < $recsize) { $short++; }
	else
	{
		my ($h0, $h1) = unpack('S2', substr($good, $p + 4 + $hist_len_at, 4));
		my $counts = 4 * ($h0 + $h1);
		# the text starts what follows the histograms' counts (its rows of
		# wait events and plan rows come after it)
		$tails{ unpack('H*',
				substr($good, $p + 4 + $recsize + $counts,
					$reclen - $recsize - $counts)) } = 1;
	}
	$last = $p;
	$p += 4 + $reclen;
}
# the evicted remainder: row size, number of rows (none evicted), rows
my $records_end = $p;
my ($rowsize, $nevicted) = unpack('L2', substr($good, $p, 8));
is($nevicted, 0, 'evicted remainder: no row (nothing was evicted)');
ok($rowsize > 0, "evicted remainder: row size $rowsize");
$p += 8 + $rowsize * $nevicted;
my $trailer = substr($good, $records_end, $p - $records_end);
is($p, $len - 4, 'records and the evicted remainder end where the CRC begins');
is( $short . ' ' . scalar(
		grep {
			my $t = $_;
			!grep { index($_, $t) == 0 } keys %tails
		} keys %texts),
	'0 0',
	"records: none shorter than the header's entry record size ($recsize), "
	  . "and every text of the view follows the fixed part and the histograms' counts of one");

sub with_crc
{
	my ($body) = @_;
	return $body . pack('L', crc32c($body));
}

my $mid = int($len / 2);
# a file written by another major pgss_ng supports (15 to 18)
my $other_major = "$server_major" == 18 ? 17 : "$server_major" + 1;
my @variants = (
	[ 'truncated to half', substr($good, 0, $mid), qr/^checksum mismatch$|truncated/ ],
	[
		'one byte flipped in the middle',
		substr($good, 0, $mid) . chr(ord(substr($good, $mid, 1)) ^ 0x5A) . substr($good, $mid + 1),
		qr/^checksum mismatch$/
	],
	[ 'wrong magic', pack('L', 0x12345678) . substr($good, 4), qr/^wrong magic number$/ ],
	[
		'older format version',
		substr($good, 0, 4) . pack('L', 9) . substr($good, 8),
		qr/^format version 9, expected 10$/
	],
	[
		'entry record size of another layout',
		substr($good, 0, 16) . pack('L', $recsize + 8) . substr($good, 20),
		qr/^entry record size ${\($recsize + 8)}, expected $recsize$/
	],
	[
		'wrong PostgreSQL major',
		substr($good, 0, 8) . pack('L', 14) . substr($good, 12),
		qr/^written by PostgreSQL 14, this is $server_major$/
	],
	[
		"another supported major ($other_major)",
		substr($good, 0, 8) . pack('L', $other_major) . substr($good, 12),
		qr/^written by PostgreSQL $other_major, this is $server_major$/
	],
	[ 'empty', '', qr/^it is empty$/ ],
	[ 'shorter than a header', substr($good, 0, 10), qr/^it is truncated$/ ],
	[
		'last record malformed (valid CRC)',
		with_crc(substr($good, 0, $last) . pack('L', 0) . $trailer),
		qr/^malformed entry$/
	],
	[
		'evicted row size of another layout (valid CRC)',
		with_crc(substr($good, 0, $records_end) . pack('L2', $rowsize + 8, 0)),
		qr/^evicted row size ${\($rowsize + 8)}, expected $rowsize$/
	],
	[
		'trailing bytes (valid CRC)',
		with_crc(substr($good, 0, $len - 4) . "\0\0\0\0"),
		qr/^trailing bytes after the last entry$/
	],);

my $warn_re = qr/WARNING:  pgss_ng ignored statistics file "pg_stat\/pgss_ng\.stat": ([^\n]*)/;

for my $v (@variants)
{
	my ($name, $data, $reason_re) = @$v;

	write_file($statfile, $data);
	my $pos = -s $node->logfile;
	$node->start;
	$node->wait_for_log($warn_re, $pos);
	# The writer logs the WARNING first, then drops what it had already
	# restored from a file with a malformed record: wait until it has
	# (the state checked exactly below).
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		ok( $node->poll_query_until(
				'postgres',
				'SELECT entries = 0 AND entries_allocated = 0 FROM pgss_ng_info'),
			"$name: the writer stopped loading");
	}

	is(quiet_psql('SELECT 1'), '1', "$name: the server runs");
	is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', "$name: no rows");
	is( quiet_psql(
			'SELECT concat_ws(\' \', entries, entries_allocated, qtext_count, qtext_bytes, '
			  . 'dealloc, dropped) FROM pgss_ng_info'),
		'0 0 0 0 0 0',
		"$name: no entries, none allocated, no texts, no dealloc or dropped");
	ok(!-e $statfile, "$name: the file is removed");

	$node->stop('fast');
	my $log = slurp_file($node->logfile, $pos);
	my @reasons = $log =~ /$warn_re/g;
	is(scalar(@reasons), 1, "$name: exactly one WARNING") or diag $log;
	like($reasons[0] // '', $reason_re, "$name: the reason");
	unlike($log, qr/pgss_ng restored/, "$name: nothing restored");
}

# The undamaged file loads whole, with the same rows.
write_file($statfile, $good);
my $pos = -s $node->logfile;
$node->start;
is(wait_restored($pos), $good_entries, 'the good file: every entry restored');
is(quiet_psql($ALL_ROWS),
	$good_rows, 'the good file: the same rows');
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng ignored/, 'the good file: no warning');

############################################################################
# Restart with pgss_ng.max below the number of saved entries.
############################################################################

# Distinct statements without constants (PostgreSQL 18 normalizes even
# those of SET): the columns of wide tables.
create_wide_table($node, 'pf_cold', 300);
create_wide_table($node, 'pf_hot',  20);
create_wide_table($node, 'pf_new',  30);
$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');
my $sql = '';
$sql .= "SELECT c$_ FROM pf_cold;\n" for 1 .. 300;
for my $round (1 .. 30)
{
	$sql .= "SELECT c$_ FROM pf_hot;\n" for 1 .. 20;
}
$node->safe_psql('postgres', $sql);

my $hot_sql =
  "SELECT string_agg(calls::text, ',' ORDER BY calls) || ' ' || count(*) FROM pgss_ng "
  . "WHERE query LIKE 'SELECT c% FROM pf\\_hot'";
is(quiet_psql($hot_sql), join(',', (30) x 20) . ' 20', 'max: 20 hot statements with 30 calls each');
my $saved = quiet_psql('SELECT entries FROM pgss_ng_info');
cmp_ok($saved, '>=', 320, "max: $saved entries before the restart");
my $calls_saved = quiet_psql('SELECT sum(calls) FROM pgss_ng');
is(quiet_psql('SELECT count(*) FROM pgss_ng_evicted'), '0', 'max: nothing evicted yet');

$node->stop('fast');
$node->adjust_conf('postgresql.conf', 'pgss_ng.max', '100');
$pos = -s $node->logfile;
$node->start;
is(wait_restored($pos), 100, 'max = 100: exactly 100 entries restored');
is(quiet_psql('SHOW pgss_ng.max'), '100', 'max = 100 in force');
cmp_ok(quiet_psql('SELECT entries FROM pgss_ng_info'), '<=', 100, 'max = 100: entries <= 100');
is(quiet_psql($hot_sql), join(',', (30) x 20) . ' 20',
	'max = 100: every hot statement kept, with its 30 calls');
ok(!-e $statfile, 'max = 100: the file is removed once read');
is( quiet_psql(
		'SELECT (SELECT sum(calls) FROM pgss_ng) + (SELECT sum(calls) FROM pgss_ng_evicted)'),
	$calls_saved,
	'max = 100: the entries not restored are in the evicted remainder (calls)');
is(quiet_psql('SELECT sum(entries) FROM pgss_ng_evicted'), $saved - 100,
	'max = 100: every entry not restored is one of the remainder\'s entries');
is(quiet_psql("SELECT entries_evicted || ' ' || dealloc FROM pgss_ng_info"),
	($saved - 100) . ' 1',
	'max = 100: the entries not restored count as evicted, by one run');

# New statements: eviction keeps the limit, the hot ones stay.
$sql = '';
$sql .= "SELECT c$_ FROM pf_new;\n" for 1 .. 30;
$node->safe_psql('postgres', $sql);
cmp_ok(quiet_psql('SELECT entries FROM pgss_ng_info'), '<=', 100,
	'max = 100: entries <= 100 after 30 new statements');
is( quiet_psql(
		"SELECT dealloc > 1 AND entries_evicted - ($saved - 100) = 5 * (dealloc - 1) "
		  . 'FROM pgss_ng_info'),
	't', 'max = 100: each eviction run (dealloc) since evicted a batch of 5');
is(quiet_psql('SELECT eviction_time > 0 FROM pgss_ng_info'),
	't', 'max = 100: the eviction runs took time (eviction_time)');
is(quiet_psql('SELECT last_eviction > stats_reset FROM pgss_ng_info'),
	't', 'max = 100: last_eviction is set');
is( quiet_psql(
		'SELECT sum(entries) = (SELECT entries_evicted FROM pgss_ng_info) FROM pgss_ng_evicted'),
	't',
	'max = 100: the evicted remainder holds every evicted entry, those not restored included');
is(quiet_psql($hot_sql), join(',', (30) x 20) . ' 20',
	'max = 100: the hot statements survive eviction');

############################################################################
# File size across restarts with the same statements.
############################################################################

my $hot_again = join('', map { "SELECT c$_ FROM pf_hot;\n" } 1 .. 20);
my @sizes;
for my $i (1 .. 5)
{
	# The same statements again: the same entries, only their counts grow.
	$node->safe_psql('postgres', $hot_again);
	my $before = snapshot();
	$node->stop('fast');
	push @sizes, (-s $statfile) - hist_bytes(slurp_file($statfile));
	$pos = -s $node->logfile;
	$node->start;
	wait_restored($pos);
	is(snapshot(), $before, "restart $i: rows and info unchanged");
}
is(join(' ', @sizes), join(' ', ($sizes[0]) x 5),
	"the file size less the histograms' counts is the same after each of 5 restarts")
  or diag "sizes: @sizes";
is(quiet_psql($hot_sql), join(',', (35) x 20) . ' 20',
	'the hot statements counted 5 more calls across the restarts');

done_testing();
