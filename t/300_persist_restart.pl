# Persistence across restarts: what survives and what does not.
#
# - A clean restart, fast and smart, keeps every row of pgss_ng_detail
#   exactly (all columns, compared as psql renders them:
#   counters, times, min/max, stddev, texts, stats_since,
#   minmax_stats_since, errors, error_exec_time, last_executed, quantiles)
#   and pgss_ng_info
#   (dealloc, stats_reset, entries, dropped, ...); counting then goes on
#   from the restored values.
# - Statements of sessions still connected when a fast shutdown starts
#   (idle, idle in a transaction, or in the middle of a statement whose
#   nested statements are still pending) are in the saved statistics with
#   their exact calls.
# - An immediate stop and a crash restart (a backend killed with SIGKILL)
#   write nothing: statistics start empty and no file is left; the writer
#   is back after the crash restart and saves at the next clean stop.
# - pgss_ng.save = off: nothing is written at a clean stop (statistics
#   start empty), and a file found at start is removed and not loaded.
#
# Every read of the views runs with pgss_ng.track = none (set at connection
# start, so not even a SET is counted), and each comparison first checks
# that two reads in a row agree, so the reads themselves disturb nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use PgssNgTest;

my $node = pgss_node(
	'persistence',
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'on',
	'pgss_ng.save' => 'on',
	autovacuum => 'off',
	restart_after_crash => 'on',
	max_connections => 20);

my $statfile = $node->data_dir . '/pg_stat/pgss_ng.stat';
my $tmpfile  = "$statfile.tmp";

# Run SQL without pgss_ng counting any of it.
sub quiet_psql
{
	my ($sql, $db) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql($db // 'postgres', $sql);
}

# Every row of the view and the info row, as psql renders them.
sub snapshot
{
	# the wait samples of what ran are in (they are added once a second)
	waits_added($node);
	my $rows = quiet_psql(
		$ALL_ROWS);
	my $info = quiet_psql(
		'SELECT dealloc, entries_evicted, stats_reset, entries, dropped, '
		  . 'entries_max, backstop_skips, qtext_bytes, qtext_count '
		  . 'FROM pgss_ng_info');
	return ($rows, $info);
}

sub nrows { my $s = shift; return $s eq '' ? 0 : scalar(split /\n/, $s); }

# Calls of the entry whose text is exactly $text (toplevel $top), or ''.
sub calls_of
{
	my ($text, $top) = @_;
	$top //= 'true';
	my $q = $text =~ s/'/''/gr;
	return quiet_psql(
		"SELECT coalesce(sum(calls), 0) || '/' || count(*) FROM pgss_ng "
		  . "WHERE query = '$q' AND toplevel = $top");
}

# Wait for the writer's "restored" message logged after $pos; return the
# number of entries it restored.
sub wait_restored
{
	my ($pos) = @_;
	$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
	my $log = slurp_file($node->logfile, $pos);
	my @n = $log =~ /pgss_ng restored (\d+) statement entries from "pg_stat\/pgss_ng\.stat"/g;
	is(scalar(@n), 1, 'one "restored" message after the start');
	return $n[0];
}

sub wait_no_clients
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity "
			  . "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"),
		'no other client backend is left');
}

sub poll_until_gone
{
	my ($file) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 unless -e $file;
		usleep(100_000);
	}
	return 0;
}

############################################################################
# Workload: several users and databases, top-level and nested statements,
# normalized and utility texts, a multibyte and a long text, blocks of all
# kinds, WAL, a min/max reset on one entry.
############################################################################

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE DATABASE other;
CREATE TABLE t (a int PRIMARY KEY, b text);
CREATE FUNCTION nested(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE s bigint := 0;
BEGIN
  FOR i IN 1..n LOOP
    s := s + (SELECT count(*) FROM t WHERE a <= i);
  END LOOP;
  RETURN s;
END $$;
GRANT SELECT ON t TO alice;
});
$node->safe_psql('other', 'CREATE EXTENSION pgss_ng');

# Start from a full reset, so stats_reset is a time we set.
$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');

my $long = 'x' x 3000;
$node->safe_psql(
	'postgres', qq{
INSERT INTO t SELECT g, repeat('x', g % 50) FROM generate_series(1, 2000) g;
SELECT count(*) FROM t WHERE a < 10;
SELECT count(*) FROM t WHERE a < 20;
SELECT count(*) FROM t WHERE a < 3000;
SELECT nested(5);
CREATE TEMP TABLE tt AS SELECT * FROM t;
SELECT count(*) FROM tt WHERE b <> '';
UPDATE t SET b = b || 'y' WHERE a % 7 = 0;
SELECT 1 AS "héllo wörld ü";
SELECT count(*) AS long_text FROM t WHERE a > 0 /* $long */;
SET work_mem = '8MB';
SELECT count(*) FROM (SELECT * FROM t ORDER BY b DESC, a) s;
VACUUM ANALYZE t;
});
$node->safe_psql('other', 'SELECT current_user, 1 + 1; SELECT current_user, 2 + 2;',
	extra_params => [ '-U', 'alice' ]);
$node->safe_psql('postgres', 'SELECT a FROM t WHERE a = 42', extra_params => [ '-U', 'alice' ]);
# Failed executions: errors, error_exec_time and last_executed are saved
# too (the rows are compared whole).
$node->psql('postgres', 'SELECT 1 / (a - a) FROM t WHERE a = 1');
$node->psql('postgres', 'SELECT 1 / (a - a) FROM t WHERE a = 2');

# Restart the min/max of the UPDATE, then run it once more: its
# minmax_stats_since differs from its stats_since and its min/max are set.
$node->safe_psql(
	'postgres', q{
SELECT pgss_ng_reset(queryid => (SELECT queryid FROM pgss_ng
                                 WHERE query LIKE 'UPDATE t SET b%'),
                     minmax_only => true);
UPDATE t SET b = b || 'z' WHERE a % 11 = 0;
UPDATE t SET b = b || 'w' WHERE a % 13 = 0;
});

wait_no_clients();

my ($rows0, $info0) = snapshot();
my ($rows0b, $info0b) = snapshot();
is($rows0b, $rows0, 'two reads in a row: same rows (reads are not counted)');
is($info0b, $info0, 'two reads in a row: same info');
ok(nrows($rows0) >= 20, 'the workload made at least 20 entries')
  or diag $rows0;
is(calls_of('s := s + (SELECT count(*) FROM t WHERE a <= i)', 'false'), '5/1',
	'nested statement: 5 calls, one entry');
is(calls_of('SELECT count(*) FROM t WHERE a < $1'), '3/1',
	'normalized statement: 3 calls, one entry');
is( quiet_psql(
		"SELECT count(*) FROM pgss_ng WHERE query LIKE 'UPDATE t SET b%' "
		  . "AND calls = 3 AND minmax_stats_since > stats_since "
		  . "AND min_exec_time > 0 AND max_exec_time >= min_exec_time"),
	'1',
	'the UPDATE: 3 calls, min/max restarted after its creation and set since');
is( quiet_psql(
		"SELECT count(DISTINCT userid) || ' ' || count(DISTINCT dbid) FROM pgss_ng"),
	'2 2', 'entries of two users and two databases');
is(calls_of("SELECT count(*) AS long_text FROM t WHERE a > \$1 /* $long */"), '1/1',
	'the long text is stored whole');
is(calls_of('SELECT $1 AS "héllo wörld ü"'), '1/1', 'the multibyte text is there');
is( quiet_psql(
		"SELECT calls || ' ' || errors || ' ' || (error_exec_time > 0) || ' ' || "
		  . "(last_executed IS NOT NULL) FROM pgss_ng_detail "
		  . "WHERE query = 'SELECT \$1 / (a - a) FROM t WHERE a = \$2'"),
	'0 2 true true', 'the failing statement: 2 errors, a last execution');

############################################################################
# Fast restart.
############################################################################

ok(!-e $statfile, 'no stats file while the server runs');
my $entries0 = quiet_psql('SELECT entries FROM pgss_ng_info');
my $pos = -s $node->logfile;
$node->restart;    # pg_ctl restart: fast mode
my $n = wait_restored($pos);
my ($rows1, $info1) = snapshot();
is($rows1, $rows0, 'fast restart: every row of pgss_ng_detail is unchanged');
is($info1, $info0, 'fast restart: pgss_ng_info is unchanged');
is($n, $entries0, "fast restart: restored all $entries0 entries");
ok(!-e $statfile, 'fast restart: the file is removed once read');
ok(!-e $tmpfile,  'fast restart: no temporary file is left');
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng writer saves statistics while/,
	'fast restart: the writer did not give up waiting for backends');

############################################################################
# Smart stop and start.
############################################################################

$pos = -s $node->logfile;
$node->stop('smart');
ok(-f $statfile, 'smart stop: the stats file is written');
ok(!-e $tmpfile, 'smart stop: no temporary file is left');
$node->start;
wait_restored($pos);
my ($rows2, $info2) = snapshot();
is($rows2, $rows0, 'smart restart: every row of pgss_ng_detail is unchanged');
is($info2, $info0, 'smart restart: pgss_ng_info is unchanged');

# Counting goes on from the restored values, in the same entry.
my $since = quiet_psql("SELECT stats_since FROM pgss_ng WHERE query = 'SELECT count(*) FROM t WHERE a < \$1'");
$node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE a < 5');
is(calls_of('SELECT count(*) FROM t WHERE a < $1'), '4/1',
	'after restart, one more call makes 4 in the restored entry');
is(quiet_psql("SELECT stats_since FROM pgss_ng WHERE query = 'SELECT count(*) FROM t WHERE a < \$1'"),
	$since, 'stats_since of the restored entry is kept');

############################################################################
# Smart shutdown requested while a session is connected: that session
# goes on running statements until it quits, and those count too.
############################################################################

my $smart = $node->background_psql('postgres');
$smart->query_safe('SELECT max(a) FROM t WHERE a > 1900') for 1 .. 2;
$pos = -s $node->logfile;
PostgreSQL::Test::Utils::system_or_bail('pg_ctl', '-D', $node->data_dir,
	'-m', 'smart', '-W', 'stop');
$node->wait_for_log(qr/received smart shutdown request/, $pos);
$smart->query_safe('SELECT max(a) FROM t WHERE a > 1950') for 1 .. 3;
$smart->quit;
my $gone = 0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	if (!-e $node->data_dir . '/postmaster.pid') { $gone = 1; last; }
	usleep(100_000);
}
ok($gone, 'smart shutdown with a session: the server stops once it quits');
$node->stop('smart', fail_ok => 1);    # only to forget the old pid
ok(-f $statfile, 'smart shutdown with a session: the file is written');
$node->start;
wait_restored($pos);
is(calls_of('SELECT max(a) FROM t WHERE a > $1'), '5/1',
	'smart shutdown with a session: its statements before and after the request count');

############################################################################
# Sessions still connected when a fast shutdown starts.
############################################################################

$node->safe_psql(
	'postgres', q{
CREATE TABLE s1t (a int); CREATE TABLE s2t (a int);
CREATE TABLE s3t (a int); CREATE TABLE s4t (a int);
INSERT INTO s1t VALUES (1); INSERT INTO s3t VALUES (1); INSERT INTO s4t VALUES (1);
CREATE FUNCTION nested3(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE s bigint := 0;
BEGIN
  FOR i IN 1..n LOOP
    s := s + (SELECT count(*) FROM s3t WHERE a IS NOT NULL);
  END LOOP;
  RETURN s;
END $$;
});

# s1: idle after three statements.
my $s1 = $node->background_psql('postgres');
$s1->query_safe('SELECT count(*) FROM s1t') for 1 .. 3;

# s2: idle in a transaction after four INSERTs (they ran, so they count,
# even though the transaction is rolled back by the shutdown).
my $s2 = $node->background_psql('postgres');
$s2->query_safe('BEGIN');
$s2->query_safe("INSERT INTO s2t VALUES ($_)") for 1 .. 4;

# s3: idle in a transaction after a function that ran 7 nested statements.
my $s3 = $node->background_psql('postgres');
$s3->query_safe('BEGIN');
$s3->query_safe('SELECT nested3(7)');

# s4: in the middle of a DO block whose 11 nested statements have run and
# are pending until the block ends (it never does: it sleeps until the
# shutdown terminates it: a failed execution, noted at exit).
my $s4 = $node->background_psql('postgres', on_error_stop => 0);
$s4->{stdin} .= q{DO $$ BEGIN
  FOR i IN 1..11 LOOP PERFORM count(*) FROM s4t WHERE a IS NOT NULL; END LOOP;
  PERFORM pg_sleep(600);
END $$;
};
$s4->{run}->pump_nb();
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity "
			  . "WHERE wait_event = 'PgSleep' AND query LIKE 'DO%'"),
		's4 is sleeping inside its DO block');
}

$pos = -s $node->logfile;
$node->restart;
for my $s ($s1, $s2, $s3, $s4)
{
	eval { $s->quit; };
}
wait_restored($pos);
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng writer saves statistics while/,
	'sessions: the writer did not give up waiting for backends');

is(calls_of('SELECT count(*) FROM s1t'), '3/1', 'idle session: 3 calls survive');
is(calls_of('INSERT INTO s2t VALUES ($1)'), '4/1',
	'idle in transaction: 4 calls survive');
is(calls_of('SELECT nested3($1)'), '1/1',
	'idle in transaction after a function: its call survives');
is(calls_of('s := s + (SELECT count(*) FROM s3t WHERE a IS NOT NULL)', 'false'), '7/1',
	'idle in transaction after a function: its 7 nested calls survive');
is(calls_of('SELECT count(*) FROM s4t WHERE a IS NOT NULL', 'false'), '11/1',
	'terminated in the middle of a DO block: its 11 pending nested calls survive');
is(quiet_psql("SELECT calls || ' ' || errors FROM pgss_ng WHERE query LIKE 'DO %'"),
	'0 1', 'the terminated DO block itself: no call, one error (noted at exit)');
is(calls_of('SELECT count(*) FROM t WHERE a < $1'), '4/1',
	'entries restored at the previous start are saved again');

############################################################################
# Immediate stop: nothing written, statistics start empty.
############################################################################

my $reset_before = quiet_psql('SELECT stats_reset FROM pgss_ng_info');
ok(nrows(quiet_psql('SELECT queryid FROM pgss_ng')) > 0, 'immediate: there are statistics before');
$node->stop('immediate');
ok(!-e $statfile, 'immediate stop: no stats file written');
ok(!-e $tmpfile,  'immediate stop: no temporary file');
$node->start;
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'immediate: no rows after the start');
is(quiet_psql('SELECT entries || \' \' || dropped FROM pgss_ng_info'), '0 0',
	'immediate: no entries');
isnt(quiet_psql('SELECT stats_reset FROM pgss_ng_info'), $reset_before,
	'immediate: stats_reset is the new start, not the old one');
$node->safe_psql('postgres', 'SELECT count(*) FROM s1t');
is(quiet_psql("SELECT string_agg(query || ':' || calls, ',') FROM pgss_ng"),
	'SELECT count(*) FROM s1t:1', 'immediate: only what ran after the start');
ok(!-e $statfile, 'immediate: no file while running');

############################################################################
# A backend killed with SIGKILL: crash restart, statistics start empty.
############################################################################

# Some statistics to lose, saved by one clean restart (the file is then
# read and removed at start).
$node->safe_psql('postgres', 'SELECT count(*) FROM s2t');
$pos = -s $node->logfile;
$node->restart;
wait_restored($pos);
is(calls_of('SELECT count(*) FROM s2t'), '1/1', 'crash: saved statistics restored first');

my $victim = $node->background_psql('postgres', on_error_stop => 0);
$victim->query_safe('SELECT count(*) FROM s3t');
my $vpid = $victim->query_safe('SELECT pg_backend_pid()');
$pos = -s $node->logfile;
ok(kill('KILL', $vpid), "crash: SIGKILL sent to backend $vpid");
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $pos);
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok($node->poll_query_until('postgres', 'SELECT true'),
		'crash: the server accepts connections again');
}
eval { $victim->quit; };
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'crash: no rows after the crash restart');
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '0', 'crash: no entries');
ok(!-e $statfile, 'crash: no stats file');
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng restored/,
	'crash: nothing restored');

# The writer is back: a clean restart saves again.
$node->safe_psql('postgres', 'SELECT count(*) FROM s4t');
$pos = -s $node->logfile;
$node->restart;
is(wait_restored($pos), quiet_psql('SELECT entries FROM pgss_ng_info'),
	'after the crash restart: restored every saved entry');
is(quiet_psql("SELECT string_agg(query || ':' || calls, ',') FROM pgss_ng"),
	'SELECT count(*) FROM s4t:1',
	'after the crash restart: exactly what ran since is saved');

############################################################################
# pgss_ng.save = off.
############################################################################

# Turned off by a reload: the clean stop writes nothing.
$node->safe_psql('postgres', 'SELECT count(*) FROM s1t');
$node->adjust_conf('postgresql.conf', 'pgss_ng.save', 'off');
$node->reload;
is(quiet_psql('SHOW pgss_ng.save'), 'off', 'save = off after the reload');
$pos = -s $node->logfile;
$node->stop('fast');
ok(!-e $statfile, 'save = off: no file written at a clean stop');
ok(!-e $tmpfile,  'save = off: no temporary file');
$node->start;
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'save = off: no rows after the restart');
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '0', 'save = off: no entries');
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng restored/,
	'save = off: nothing restored');

# A file present at a start with save = off is removed, not loaded.
$node->adjust_conf('postgresql.conf', 'pgss_ng.save', 'on');
$node->reload;
$node->safe_psql('postgres', 'SELECT count(*) FROM s1t');
$node->stop('fast');
ok(-f $statfile, 'save = on again: the clean stop writes the file');
$node->adjust_conf('postgresql.conf', 'pgss_ng.save', 'off');
$pos = -s $node->logfile;
$node->start;
ok(poll_until_gone($statfile), 'save = off at start: the old file is removed');
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'save = off at start: no rows');
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '0', 'save = off at start: no entries');
unlike(slurp_file($node->logfile, $pos), qr/pgss_ng restored|pgss_ng ignored/,
	'save = off at start: nothing restored, no warning');
$node->stop('fast');
ok(!-e $statfile, 'save = off: still no file after the next clean stop');

unlike(slurp_file($node->logfile), qr/pgss_ng ignored statistics file/,
	'no file was ever rejected');

done_testing();
