# Differential test: pg_stat_statements is the reference.
#
# One server preloads both pg_stat_statements and pgss_ng (in that order) with
# the same track settings; a concurrent workload runs (pgbench in the simple,
# extended and prepared protocols and in pipelines, psql scripts with failing
# statements), from two roles plus the superuser, in two databases (UTF8 and
# LATIN1): DML and MERGE, DDL on temporary tables, utility statements
# (VACUUM, ANALYZE, SET, SHOW, transactions, SET ROLE, COPY, CREATE TABLE AS,
# REFRESH), PL/pgSQL and SQL functions, triggers (immediate and deferred to
# commit), DO blocks, cursors, PREPARE/EXECUTE, EXPLAIN, multi-statement
# query strings, all sorts of literals, cancelled and terminated sessions.
# Once every client backend is gone, both views are read (from a session
# that neither extension tracks) and must hold exactly the same keys (userid,
# dbid, queryid, toplevel) with the same calls, plans, rows, block, WAL,
# JIT and (PostgreSQL 18) parallel worker counters, block I/O and JIT times
# (track_io_timing is on) and query text (pgss_ng's entries whose
# executions all failed left aside: pg_stat_statements has no trace of
# them); what the server cannot measure is NULL in pgss_ng.  Execution
# times are equal for planned statements and at least the reference's for
# utility statements (see @exec_time_cols).  A session of its own makes
# the rarely used compared columns non-zero (temporary and local blocks and
# their I/O times, wal_buffers_full, JIT where the server has it), and
# that they are is checked.  Some keys are also checked for the exact
# counts the workload caused, failures (pgss_ng's errors column) included,
# and the text of a statement whose first execution failed (that of the
# first successful one).
#
# The scenario runs on three servers: track = top (planning off); track =
# all with track_planning = on; track = top with track_utility = off and
# track_planning = on (statements run by utility statements are then
# top-level ones).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use PgssNgTest;

# Transactions per pgbench client (deterministic counts: -t, not -T).
my $T  = 30;
my $T2 = 20;

my $tmp = PostgreSQL::Test::Utils::tempdir;

# ------------------------------------------------------------------ scripts
# Each statement shape is spelled exactly one way throughout, so that the
# first text stored for a queryid is the same whichever client comes first.

# All three protocols.  With -M simple the variables become literal
# constants (normalized to $n); with -M extended/prepared they become
# parameters, so extended and prepared share queryids (and entries).
my $common = <<'EOS';
\set aid random(1, 100)
\set delta random(-500, 500)
BEGIN;
UPDATE accounts SET balance = balance + :delta WHERE id = :aid;
SELECT balance FROM accounts WHERE id = :aid;
INSERT INTO history (aid, delta) VALUES (:aid, :delta);
SELECT transfer(:aid, :delta);
SET LOCAL work_mem = '8MB';
SHOW work_mem;
COMMIT;
DELETE FROM history WHERE aid = :aid AND delta = :delta + 1000;
SELECT small_bump(:delta);
SELECT count(*) FROM history WHERE aid = :aid AND delta > :delta LIMIT 5;
SELECT :aid + 1.5e3 AS f, E'it\'s' AS e, $$dollar$$ AS d, U&'\0041' AS u, B'101' AS b, X'1F' AS x, interval '1 day' AS i, -2.5 AS n, ARRAY[1, -2] AS a, '{3,4}'::int[] AS c, :delta IN (1, 2, -3) AS l;
SELECT id, /* inline */ balance
  FROM accounts
  WHERE id = :aid AND balance > -1000000000;
MERGE INTO small s USING (SELECT 2 AS id) v ON s.id = v.id WHEN MATCHED THEN UPDATE SET x = s.x + 1 WHEN NOT MATCHED THEN INSERT VALUES (v.id, 0);
WITH ins AS (INSERT INTO history (aid, delta) VALUES (:aid, 0) RETURNING id) SELECT count(*) FROM ins;
SELECT :aid AS "naïve", 'crème' AS brûlée;
BEGIN;
DECLARE cur CURSOR FOR SELECT id, balance FROM accounts ORDER BY id;
FETCH 3 FROM cur;
FETCH NEXT FROM cur;
CLOSE cur;
COMMIT;
EOS

# Simple protocol only: DDL on temporary tables, a parallel query, VACUUM,
# ANALYZE, a compound (multi-statement) query string, a DO block.
my $extra = <<'EOS';
\set n random(1, 20)
\set lim random(0, 10)
BEGIN;
CREATE TEMP TABLE tmp_work (a int, b text) ON COMMIT DROP;
INSERT INTO tmp_work SELECT g, 'row ' || g FROM generate_series(1, :n) g;
CREATE INDEX IF NOT EXISTS tmp_work_a ON tmp_work (a);
SELECT count(*) FROM tmp_work WHERE a > :lim;
UPDATE tmp_work SET b = upper(b) WHERE a <= :lim;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SELECT count(*) FROM accounts WHERE balance > -1000000000;
COMMIT;
CREATE TEMP TABLE tmp_drop (x int);
INSERT INTO tmp_drop VALUES (:n), (:lim);
DROP TABLE tmp_drop;
VACUUM small;
ANALYZE accounts;
SELECT :n + 1 AS n1 \; SELECT abs(:lim) AS lim1;
SET work_mem = '4MB';
RESET work_mem;
DO $$ BEGIN PERFORM transfer(7, 1); END $$;
EOS

# Extended and prepared protocols: statements in a pipeline (one implicit
# transaction, a single Sync).
my $pipeline = <<'EOS';
\set aid random(1, 100)
\set delta random(-500, 500)
\startpipeline
SELECT balance FROM accounts WHERE id = :aid;
INSERT INTO history (aid, delta) VALUES (:aid, :delta);
SELECT count(*) FROM history WHERE aid = :aid AND delta > :delta LIMIT 5;
\endpipeline
EOS

# psql (simple protocol), one session per role and database; :sess is a
# number unique to the session.  Nine statements fail.  The last DO block
# runs 300 distinct nested statements (more than pgss_ng keeps pending
# before flushing early).  The session ends with a failed statement, so
# what it ran nested stays pending until the backend exits.
my $errs = <<'EOS';
SELECT 10 / (x - x) FROM small WHERE id = 1;
INSERT INTO uniq SELECT 1;
INSERT INTO uniq (k) VALUES (:sess);
INSERT INTO uniq (k) VALUES (:sess);
DELETE FROM uniq WHERE k = :sess;
SELECT * FROM no_such_table;
DROP TABLE no_such_table;
DO $$ BEGIN PERFORM 1 / 0; EXCEPTION WHEN division_by_zero THEN RAISE NOTICE 'caught'; END $$;
DO $$ BEGIN RAISE EXCEPTION 'boom'; END $$;
BEGIN;
SELECT balance FROM accounts WHERE id = 1;
SELECT 1 / 0;
ROLLBACK;
PREPARE getbal(int) AS SELECT balance, note FROM accounts WHERE id = $1;
EXECUTE getbal(5);
EXECUTE getbal(6);
DEALLOCATE getbal;
EXPLAIN (COSTS OFF) SELECT id FROM accounts WHERE id = 42;
COPY (SELECT id FROM accounts WHERE id <= 5 ORDER BY id) TO STDOUT;
SELECT count(*) FROM accounts WHERE id < 10 \; UPDATE small SET x = x WHERE id = 1 \; SELECT 'multi' AS tag, 2 AS two;
/* commented */ SELECT sum(balance) IS NOT NULL AS ok FROM accounts;
COPY history (aid, delta) FROM STDIN;
1	1
2	2
3	3
\.
CREATE TEMP TABLE tmp_ctas AS SELECT id FROM accounts WHERE id <= 7;
SELECT id INTO TEMP tmp_into FROM accounts WHERE id <= 3;
REFRESH MATERIALIZED VIEW mv_small;
DO $$ BEGIN UPDATE small SET x = x WHERE id = 2; PERFORM pg_cancel_backend(pg_backend_pid()); PERFORM pg_sleep(1); END $$;
DO $$ BEGIN FOR i IN 1..300 LOOP EXECUTE 'SELECT ' || repeat('1 * ', i) || '1'; END LOOP; END $$;
BIG_IN_LIST
BEGIN;
DECLARE fc CURSOR FOR SELECT transfer(id, 0) FROM accounts WHERE id <= 3 ORDER BY id;
FETCH 2 FROM fc;
COMMIT;
SELECT imm_lookup(2) AS imm;
SET ROLE carol;
SELECT current_user AS who;
RESET ROLE;
SELECT fail_after(3);
EOS
# A long statement: 3000 constants.
$errs =~ s/BIG_IN_LIST/'SELECT count(*) AS big FROM accounts WHERE id IN ('
  . join(', ', 1 .. 3000) . ');'/e;
my $errs_expected_errors = 9;

# psql (simple protocol), one session of alice's: what makes the rarely
# non-zero compared columns non-zero (see @nonzero_cols).  A sort that
# spills to a temporary file (temp blocks and their I/O times); a
# temporary table bigger than the session's temp_buffers (set before its
# first use of a temporary table), so that local blocks are written and
# read again (and timed, track_io_timing = on); a statement compiled by
# JIT, where the server can (jit_*, inlining and optimization too); a bulk
# insert with more WAL than the server's 64 kB of wal_buffers
# (wal_buffers_full).
my $io = <<'EOS';
SET temp_buffers = '800kB';
SET work_mem = '64kB';
SELECT count(*) AS spilled FROM (SELECT g FROM generate_series(1, 20000) g ORDER BY g DESC) s;
RESET work_mem;
CREATE TEMP TABLE tmp_io (a int, b text);
INSERT INTO tmp_io SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
SELECT count(*) AS local_rows, sum(length(b)) AS local_bytes FROM tmp_io;
DROP TABLE tmp_io;
SET jit_above_cost = 0;
SET jit_inline_above_cost = 0;
SET jit_optimize_above_cost = 0;
SELECT sum(balance + id) AS jitted FROM accounts WHERE note IS NULL OR id > 0;
RESET jit_above_cost;
RESET jit_inline_above_cost;
RESET jit_optimize_above_cost;
INSERT INTO bulk SELECT g, repeat('y', 200) FROM generate_series(1, 5000) g;
EOS

# The superuser, alone after the concurrent workload: a statement parsed
# while neither extension tracks anything, executed once both track again,
# is stored with its own text (no entry was made at parse analysis to
# normalize it).  Alone, because an invalidation of the prepared statement
# (catalog changes by other sessions) would analyze it again, tracked.
my $toggle = <<'EOS';
SELECT set_config('pg_stat_statements.track', 'none', false) AS a, set_config('pgss_ng.track', 'none', false) AS b;
PREPARE late AS SELECT 2 + 3 AS late;
SELECT set_config('pg_stat_statements.track', 'TRACK', false) AS a, set_config('pgss_ng.track', 'TRACK', false) AS b;
EXECUTE late;
EXECUTE late;
EOS

# A session terminated while its statement runs (FATAL): what that
# statement ran nested before is still counted.
my $terminated =
  q{DO $$ BEGIN UPDATE small SET x = x + 0 WHERE id = 2; PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(1); END $$};

my %file;
for ([ common => $common ], [ extra => $extra ], [ pipeline => $pipeline ],
	[ errs => $errs ], [ io => $io ])
{
	my ($name, $text) = @$_;
	$file{$name} = "$tmp/010_$name.sql";
	open my $fh, '>', $file{$name} or die "could not write $file{$name}: $!";
	print $fh $text;
	close $fh;
}

# Objects of one database; alice owns the tables, bob may use them (and is
# a member of alice, so he may also VACUUM and REFRESH).
my $setup_db = <<'EOS';
CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL DEFAULT 0, note text);
INSERT INTO accounts SELECT g, 0, NULL FROM generate_series(1, 100) g;
CREATE TABLE history (id bigserial PRIMARY KEY, aid int, delta int);
CREATE TABLE uniq (k int PRIMARY KEY);
INSERT INTO uniq VALUES (1), (2), (3);
CREATE TABLE small (id int PRIMARY KEY, x int NOT NULL);
INSERT INTO small VALUES (1, 0), (2, 0);
CREATE TABLE bulk (x int, pad text);
ALTER TABLE bulk OWNER TO alice;
CREATE MATERIALIZED VIEW mv_small AS SELECT id, x FROM small;
ALTER MATERIALIZED VIEW mv_small OWNER TO alice;
ALTER TABLE accounts OWNER TO alice;
ALTER TABLE history OWNER TO alice;
ALTER TABLE uniq OWNER TO alice;
ALTER TABLE small OWNER TO alice;
GRANT ALL ON ALL TABLES IN SCHEMA public TO bob;
GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO bob;
CREATE FUNCTION transfer(p_id int, p_delta int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  v int;
BEGIN
  UPDATE accounts SET balance = balance + p_delta WHERE id = p_id;
  SELECT balance INTO v FROM accounts WHERE id = p_id;
  INSERT INTO history (aid, delta) VALUES (p_id, p_delta);
  RETURN v;
END $$;
CREATE FUNCTION small_bump(d int) RETURNS int LANGUAGE sql AS $$
UPDATE small SET x = x + sign(d)::int WHERE id = 1;
SELECT x FROM small WHERE id = 1;
$$;
CREATE TABLE audit (aid int, at_commit bool);
ALTER TABLE audit OWNER TO alice;
GRANT ALL ON audit TO bob;
CREATE FUNCTION history_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit (aid, at_commit) VALUES (NEW.aid, TG_NAME = 'history_deferred');
  RETURN NEW;
END $$;
CREATE TRIGGER history_now AFTER INSERT ON history FOR EACH ROW EXECUTE FUNCTION history_audit();
CREATE CONSTRAINT TRIGGER history_deferred AFTER INSERT ON history DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION history_audit();
CREATE FUNCTION imm_lookup(p int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v int;
BEGIN
  SELECT count(*) INTO v FROM small WHERE id <= p;
  RETURN v;
END $$;
CREATE FUNCTION fail_after(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts SET note = 'touched' WHERE id = p;
  RETURN 1 / (p - p);
END $$;
EOS

# ------------------------------------------------------------------ helpers

# Columns compared for every key, after the key and before the text: every
# column both views have on the server's version, but the plan and
# execution times (execution times: see @exec_time_cols) and the two
# timestamps, which each extension measures itself.  Counts are compared
# exactly.  Block I/O and JIT times are the
# server's own measurements (the same BufferUsage, WalUsage and JIT
# instrumentation reach both extensions), compared to within 1e-9
# (relative): the two add them up in different orders.  Before
# PostgreSQL 17, pg_stat_statements' blk_*_time is pgss_ng's
# shared_blk_*_time.
my @count_cols = qw(calls plans rows
  shared_blks_hit shared_blks_read shared_blks_dirtied shared_blks_written
  local_blks_hit local_blks_read local_blks_dirtied local_blks_written
  temp_blks_read temp_blks_written wal_records wal_fpi wal_bytes
  jit_functions jit_inlining_count jit_optimization_count
  jit_emission_count);
my @time_cols = qw(shared_blk_read_time shared_blk_write_time
  temp_blk_read_time temp_blk_write_time jit_generation_time
  jit_inlining_time jit_optimization_time jit_emission_time);

# Columns measured from a server version on: [ column, major, is a time ].
my @versioned_cols = (
	[ 'local_blk_read_time',        17, 1 ],
	[ 'local_blk_write_time',       17, 1 ],
	[ 'jit_deform_count',           17, 0 ],
	[ 'jit_deform_time',            17, 1 ],
	[ 'wal_buffers_full',           18, 0 ],
	[ 'parallel_workers_to_launch', 18, 0 ],
	[ 'parallel_workers_launched',  18, 0 ],);

# Execution times, compared for the keys of planned statements only
# (planned_statement()): both extensions take a planned statement's time
# from the same executor instrumentation (queryDesc->totaltime, which
# whichever ExecutorStart hook runs first allocates for both), so each
# call's time is the same double on both sides; the totals and the merged
# means and variances differ by rounding only (pgss_ng adds pending
# counts up per backend and merges them with Chan's parallel form of
# Welford's method, pg_stat_statements updates per call): relative
# 1e-9, and for stddev also an absolute 1e-6 ms, as the variance of
# nearly equal times is a difference of nearly equal sums.  A utility
# statement is timed by each extension around its own ProcessUtility
# hook, and pgss_ng's hook (loaded last) calls pg_stat_statements' from
# inside: its times enclose pg_stat_statements' and are not equal, so
# for utility keys pgss_ng's total, min and max must only be at least
# pg_stat_statements'.
my @exec_time_cols = qw(total_exec_time min_exec_time max_exec_time
  mean_exec_time stddev_exec_time);

# Is this text that of a planned statement (one whose executions the
# executor hooks time)?  Its first keyword (after leading comments) is
# SELECT (not SELECT INTO, which is CREATE TABLE AS), INSERT, UPDATE,
# DELETE, MERGE, WITH, VALUES or TABLE, or PREPARE: neither extension
# counts PREPARE or EXECUTE as utility statements, the prepared query's
# executions are recorded under the PREPARE's text.  Texts that a
# utility statement and the query it runs share (COPY (SELECT ...) TO,
# EXPLAIN, CREATE TABLE AS, DECLARE) count as utility: only the bounds
# are checked for both.
sub planned_statement
{
	my ($text) = @_;
	$text =~ s{^(?:\s+|/\*.*?\*/|--[^\n]*\n)*}{}s;
	return 0 if $text =~ /^SELECT\b.*\bINTO\b/is;
	return $text =~ /^(?:SELECT|INSERT|UPDATE|DELETE|MERGE|WITH|VALUES|TABLE|PREPARE)\b/i;
}

# Do two execution times of column col agree (see @exec_time_cols)?
sub same_exec_time
{
	my ($col, $x, $y) = @_;
	my $max = abs($x) > abs($y) ? abs($x) : abs($y);
	my $tol = 1e-9 * $max;
	$tol += 1e-6 if $col eq 'stddev_exec_time';
	return abs($x - $y) <= $tol;
}

# Columns that the workload makes non-zero somewhere (their sum over all
# of pgss_ng's keys is > 0), so that comparing them is not comparing
# zeros: [ column, first major that has it, needs JIT ].  The "io" script
# exists for them.
my @nonzero_cols = (
	[ 'shared_blk_read_time',   15, 0 ],
	[ 'temp_blks_read',         15, 0 ],
	[ 'temp_blks_written',      15, 0 ],
	[ 'temp_blk_read_time',     15, 0 ],
	[ 'temp_blk_write_time',    15, 0 ],
	[ 'local_blks_read',        15, 0 ],
	[ 'local_blks_written',     15, 0 ],
	[ 'local_blk_read_time',    17, 0 ],
	[ 'local_blk_write_time',   17, 0 ],
	[ 'wal_buffers_full',       18, 0 ],
	[ 'jit_functions',          15, 1 ],
	[ 'jit_generation_time',    15, 1 ],
	[ 'jit_inlining_count',     15, 1 ],
	[ 'jit_inlining_time',      15, 1 ],
	[ 'jit_optimization_count', 15, 1 ],
	[ 'jit_optimization_time',  15, 1 ],
	[ 'jit_emission_count',     15, 1 ],
	[ 'jit_emission_time',      15, 1 ],);

my (@cols, %is_time);

# Set @cols and %is_time for a server of this major version.
sub set_compared_columns
{
	my $major = shift;
	@cols    = (@count_cols, @time_cols);
	%is_time = map { $_ => 1 } @time_cols;
	for my $v (@versioned_cols)
	{
		my ($col, $since, $time) = @$v;
		next if $major < $since;
		push @cols, $col;
		$is_time{$col} = 1 if $time;
	}
	return;
}

# Do two values of column col agree (see @count_cols, @time_cols)?
sub same_value
{
	my ($col, $x, $y) = @_;
	return $x eq $y if !$is_time{$col} || $x eq "" || $y eq "";
	my $max = abs($x) > abs($y) ? abs($x) : abs($y);
	return abs($x - $y) <= 1e-9 * $max;
}

# Read one view with a single statement; returns { "userid/dbid/queryid/tl"
# => { col => value, ..., query => text } }.  Runs in a session that neither
# extension tracks, so reading does not add entries.  $old_names: the view
# calls shared_blk_*_time blk_*_time (pg_stat_statements before 17).
# $where filters the rows; @extra are more columns (read, not compared).
sub read_view
{
	my ($node, $view, $old_names, $where, @extra) = @_;
	my @c = (@cols, @extra);
	my @exprs = map {
		$old_names && /^shared_(blk_\w+_time)$/ ? "$1 AS $_" : $_
	} @c;
	my $sql =
	    "SELECT userid, dbid, queryid, toplevel, "
	  . join(', ', @exprs)
	  . ", encode(convert_to(query, 'UTF8'), 'hex') FROM $view $where";
	my $out = $node->safe_psql('postgres', $sql);
	my %h;
	for my $line (split /\n/, $out)
	{
		my @f = split /\|/, $line, -1;
		die "unexpected line from $view: $line" unless @f == 5 + @c;
		my $key = join('/', @f[ 0 .. 3 ]);
		die "duplicate key $key in $view" if exists $h{$key};
		my %row;
		@row{@c} = @f[ 4 .. 3 + @c ];
		$row{query} = pack('H*', $f[-1]);
		$h{$key} = \%row;
	}
	return \%h;
}

sub show_text
{
	my $t = shift;
	return '(null)' unless defined $t;
	$t =~ s/\n/\\n/g;
	return length($t) > 100 ? substr($t, 0, 100) . '...' : $t;
}

# Entries with this exact text for (userid, dbid, toplevel).
sub entries_of
{
	my ($view, $uid, $did, $tl, $text) = @_;
	return map { $view->{$_} } grep {
		my ($u, $d, undef, $t) = split m{/}, $_;
		$u eq $uid && $d eq $did && $t eq $tl && $view->{$_}{query} eq $text
	} keys %$view;
}

# Column col of the entry with this exact text for (userid, dbid, toplevel);
# undef if there is none; the values, sorted and comma-separated, if there
# are several.
sub value_of
{
	my ($view, $uid, $did, $tl, $text, $col) = @_;
	my @e = entries_of($view, $uid, $did, $tl, $text);
	return undef unless @e;
	return join(',', sort { $a <=> $b } map { $_->{$col} } @e);
}

sub run_scenario
{
	my ($name, $track, $utility, $planning) = @_;
	my $all  = $track eq 'all';
	my $util = $utility eq 'on';

	my $node = pgss_node(
		$name,
		_init => { extra => [ '--encoding=UTF8', '--locale=C' ] },
		shared_preload_libraries => 'pg_stat_statements,pgss_ng',
		max_connections => 50,
		'pg_stat_statements.max' => 5000,
		'pg_stat_statements.track' => $track,
		'pg_stat_statements.track_utility' => $utility,
		'pg_stat_statements.track_planning' => $planning,
		'pgss_ng.max' => 5000,
		'pgss_ng.track' => $track,
		'pgss_ng.track_utility' => $utility,
		'pgss_ng.track_planning' => $planning,
		track_io_timing => 'on',
		wal_buffers => '64kB');
	# The server's version decides what its pg_stat_statements (the
	# reference) records; the exact counts below follow it.
	my $pg16 = $node->pg_version >= 16;
	my $pg17 = $node->pg_version >= 17;
	my $pg18 = $node->pg_version >= 18;
	my $major = $pg18 ? 18 : $pg17 ? 17 : $pg16 ? 16 : 15;
	set_compared_columns($major);
	# What utility statements run is nested: when they are tracked, and
	# from PostgreSQL 17 always.
	my $nested_util = $util || $pg17;

	# Setup, tracked like everything else.
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN IN ROLE alice;
CREATE ROLE carol NOLOGIN;
GRANT carol TO alice, bob;
CREATE DATABASE db2 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
});
	$node->safe_psql($_, $setup_db) for qw(postgres db2);

	# The workload: everything started at once.
	my ($host, $port) = ($node->host, $node->port);
	my @procs;
	my $start = sub {
		my ($label, @cmd) = @_;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @procs, { label => $label, h => $h, out => \$out, err => \$err };
	};
	my $pgbench = sub {
		my ($user, $db, $mode, $script, $clients, $xacts) = @_;
		$start->(
			"pgbench $mode $script $user\@$db: " . ($clients * $xacts),
			'pgbench', '-n', '-h', $host, '-p', $port, '-U', $user,
			'-M', $mode, '-c', $clients, '-t', $xacts,
			'-f', $file{$script}, $db);
	};
	my $psql = sub {
		my ($user, $db, $sess) = @_;
		$start->(
			"psql errs $user\@$db $sess",
			'psql', '-X', '-q', '-h', $host, '-p', $port, '-U', $user,
			'-d', $db, '-v', 'ON_ERROR_STOP=0', '-v', "sess=$sess",
			'-f', $file{errs});
	};

	# the bootstrap superuser has the name of the OS user that ran initdb
	my $superuser = (getpwuid($>))[0];
	$pgbench->('alice',    'postgres', 'simple',   'common', 3, $T);
	$pgbench->('alice',    'postgres', 'simple',   'extra',  2, $T);
	$pgbench->('bob',      'db2',      'extended', 'common', 2, $T);
	$pgbench->('bob',      'db2',      'prepared', 'common', 2, $T2);
	$pgbench->('alice',    'db2',      'prepared', 'common', 2, $T);
	$pgbench->('bob',      'postgres', 'extended', 'common', 1, $T);
	$pgbench->($superuser, 'db2',      'simple',   'extra',  2, $T);
	$pgbench->('alice',    'db2',      'extended', 'pipeline', 2, $T);
	$pgbench->('bob',      'postgres', 'prepared', 'pipeline', 2, $T);
	$psql->('alice', 'postgres', 101);
	$psql->('alice', 'postgres', 102);
	$psql->('bob',   'db2',      201);
	$psql->('bob',   'postgres', 202);
	$psql->('alice', 'db2',      203);
	$start->(
		'psql terminated', 'psql', '-X', '-q', '-h', $host, '-p', $port,
		'-U', 'alice', '-d', 'postgres', '-c', $terminated);
	$start->(
		'psql io alice@postgres', 'psql', '-X', '-q', '-h', $host,
		'-p', $port, '-U', 'alice', '-d', 'postgres',
		'-v', 'ON_ERROR_STOP=1', '-f', $file{io});

	for my $p (@procs)
	{
		my $ok  = $p->{h}->finish;
		my $out = ${ $p->{out} };
		my $err = ${ $p->{err} };
		if ($p->{label} eq 'psql terminated')
		{
			ok(!$ok, "$name: $p->{label} fails");
			like($err, qr/FATAL:  terminating connection due to administrator command/,
				"$name: $p->{label} was terminated");
			next;
		}
		ok($ok, "$name: $p->{label} exits 0") or diag "stdout:\n$out\nstderr:\n$err";
		if ($p->{label} =~ /^pgbench.*: (\d+)$/)
		{
			like(
				$out,
				qr{number of transactions actually processed: $1/$1\n},
				"$name: $p->{label} ran all its transactions");
		}
		elsif ($p->{label} =~ /^psql errs/)
		{
			my $n = () = $err =~ /ERROR:/g;
			is($n, $errs_expected_errors,
				"$name: $p->{label} had the expected failing statements")
			  or diag $err;
		}
	}

	(my $toggle_sql = $toggle) =~ s/TRACK/$track/g;
	$node->safe_psql('postgres', $toggle_sql);

	# A statement without constants whose first execution fails (division
	# by zero), then succeeds spelled otherwise (same queryid): both keep
	# the text of the first successful planning or execution.  In one
	# session (et), and in two (et2: the failure is merged at its
	# session's exit).
	$node->safe_psql('postgres',
		'CREATE TABLE et (x int, y int); INSERT INTO et VALUES (1, 0); '
		  . 'CREATE TABLE et2 (x int, y int); INSERT INTO et2 VALUES (1, 0)');
	$node->psql(
		'postgres', "SELECT x / y FROM et;\nUPDATE et SET y = 1;\nselect X / Y from ET;",
		on_error_stop => 0);
	$node->psql('postgres', 'SELECT x / y FROM et2', on_error_stop => 0);
	$node->safe_psql('postgres', 'UPDATE et2 SET y = 1');
	$node->safe_psql('postgres', 'select X / Y from ET2');

	# From here on nothing we run is tracked by either extension.
	local $ENV{PGOPTIONS} = '-c pg_stat_statements.track=none -c pgss_ng.track=none';

	# Exited backends have flushed everything pending (at exit, waiting).
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity "
			  . "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"),
		"$name: all client backends are gone");

	# Entries whose executions all failed (no plan, no call) are pgss_ng's
	# own: pg_stat_statements has no trace of them.  Their failures are
	# checked below, in $ng_all.
	my $ref = read_view($node, 'pg_stat_statements', !$pg17, '', @exec_time_cols);
	my $ng  = read_view($node, 'pgss_ng', 0, 'WHERE plans + calls > 0', @exec_time_cols);
	my $ng_all = read_view($node, 'pgss_ng', 0, '', 'errors');

	# Every difference, key by key.
	my @diffs;
	my %keys = map { $_ => 1 } (keys %$ref, keys %$ng);
	for my $k (sort keys %keys)
	{
		my ($r, $n) = ($ref->{$k}, $ng->{$k});
		if (!$n)
		{
			push @diffs, "only in pg_stat_statements: $k calls=$r->{calls} plans=$r->{plans} " . show_text($r->{query});
			next;
		}
		if (!$r)
		{
			push @diffs, "only in pgss_ng: $k calls=$n->{calls} plans=$n->{plans} " . show_text($n->{query});
			next;
		}
		my @d = map { "$_ $r->{$_} vs $n->{$_}" }
		  grep { !same_value($_, $r->{$_}, $n->{$_}) } @cols;
		push @d, 'query ' . show_text($r->{query}) . ' vs ' . show_text($n->{query})
		  if $r->{query} ne $n->{query};
		push @diffs, "$k (" . show_text($r->{query}) . "): " . join(', ', @d) if @d;
	}
	is(scalar(@diffs), 0, "$name: pgss_ng and pg_stat_statements agree on every key")
	  or diag join("\n", "pg_stat_statements vs pgss_ng:", @diffs);

	# Execution times (see @exec_time_cols): those of planned statements
	# equal pg_stat_statements', those of utility statements enclose them.
	my (@tdiffs, @udiffs);
	my ($nplanned, $nutility) = (0, 0);
	for my $k (sort keys %$ref)
	{
		my ($r, $n) = ($ref->{$k}, $ng->{$k});
		next unless $n && $r->{calls} > 0 && $n->{calls} == $r->{calls};
		my $what = "$k (" . show_text($r->{query}) . "): ";
		if (planned_statement($r->{query}))
		{
			$nplanned++;
			my @d = map { "$_ $r->{$_} vs $n->{$_}" }
			  grep { !same_exec_time($_, $r->{$_}, $n->{$_}) } @exec_time_cols;
			push @tdiffs, $what . join(', ', @d) if @d;
		}
		else
		{
			$nutility++;
			my @d = map { "$_ $r->{$_} vs $n->{$_}" }
			  grep { $n->{$_} < $r->{$_} * (1 - 1e-9) }
			  qw(total_exec_time min_exec_time max_exec_time);
			push @udiffs, $what . join(', ', @d) if @d;
		}
	}
	note("$name: execution times of $nplanned planned and $nutility utility statements compared");
	is(scalar(@tdiffs), 0,
		"$name: planned statements' execution times (total, min, max, mean, stddev) equal pg_stat_statements'")
	  or diag join("\n", "pg_stat_statements vs pgss_ng:", @tdiffs);
	cmp_ok($nplanned, '>', 50, "$name: many planned statements' execution times compared");
	is(scalar(@udiffs), 0,
		"$name: utility statements' execution times (total, min, max) are at least pg_stat_statements'")
	  or diag join("\n", "pg_stat_statements vs pgss_ng:", @udiffs);

	# The columns compared above are not all zeros (see @nonzero_cols).
	my $jit = $node->safe_psql('postgres', 'SELECT pg_jit_available()') eq 't';
	note("$name: " . ($jit ? 'the server has JIT' : 'the server has no JIT: the JIT counters are 0 on both sides'));
	for my $c (@nonzero_cols)
	{
		my ($col, $since, $needs_jit) = @$c;
		next if $major < $since;
	  SKIP:
		{
			skip 'the server has no JIT (pg_jit_available() is false)', 1
			  if $needs_jit && !$jit;
			my $sum = 0;
			$sum += $_->{$col} for values %$ng;
			cmp_ok($sum, '>', 0, "$name: $col is non-zero somewhere");
		}
	}

	# The statements whose first execution failed: their texts (the
	# failed run's only where its planning, tracked, succeeded first).
	for my $t ('et', 'et2')
	{
		my $want = $planning eq 'on' ? "SELECT x / y FROM $t" : "select X / Y from \U$t";
		is( $node->safe_psql(
				'postgres', qq{
SELECT n.query || ' | ' || n.calls || ' ' || n.errors || ' | ' || p.query
FROM pgss_ng n JOIN pg_stat_statements p USING (userid, dbid, queryid, toplevel)
WHERE lower(n.query) = 'select x / y from $t'}),
			"$want | 1 1 | $want",
			"$name: $t: the text of the first successful run, as in pg_stat_statements");
	}

	# PostgreSQL 18 merges what earlier servers kept apart (each temporary
	# table's statements, IN lists of different lengths, SET values): fewer
	# keys for the same workload.
	my $many = $all ? 1000 : $pg18 ? ($util ? 250 : 100) : 400;
	cmp_ok(scalar(keys %$ref), '>', $many, "$name: many keys compared");

	# The parallel query of the "extra" script plans workers: the
	# comparison of PostgreSQL 18's parallel worker counts is not one of
	# zeros.
	if ($pg18)
	{
		my $workers = 0;
		$workers += $_->{parallel_workers_to_launch} for values %$ng;
		cmp_ok($workers, '>', 0, "$name: parallel workers planned");
	}

	# What the server cannot measure is NULL on every row, never 0; the
	# rest is never NULL.
	my $nrows = $node->safe_psql('postgres', 'SELECT count(*) FROM pgss_ng');
	for my $v (@versioned_cols)
	{
		my ($col, $since) = @$v;
		is( $node->safe_psql('postgres',
				"SELECT count(*) FROM pgss_ng WHERE $col IS NULL"),
			$major >= $since ? 0 : $nrows,
			"$name: $col is " . ($major >= $since ? 'never' : 'always') . ' NULL');
	}

	# Nothing here resets min/max: each entry's time histograms hold
	# exactly its successful executions and its plannings (an entry whose
	# executions all failed: none).
	is( $node->safe_psql(
			'postgres', q{
		SELECT count(*) || ' ' || count(*) FILTER (WHERE calls <> h_exec)
			   || ' ' || count(*) FILTER (WHERE plans <> h_plan)
		FROM (SELECT calls, plans,
					 (SELECT coalesce(sum(count), 0)
					  FROM pgss_ng_exec_time_histogram(p.userid, p.dbid,
													   p.queryid, p.toplevel))
					   AS h_exec,
					 (SELECT coalesce(sum(count), 0)
					  FROM pgss_ng_plan_time_histogram(p.userid, p.dbid,
													   p.queryid, p.toplevel))
					   AS h_plan
			  FROM pgss_ng p) s}),
		scalar(keys %$ng_all) . ' 0 0',
		"$name: every entry's histograms sum to its calls and plans");

	is( $node->safe_psql('postgres', 'SELECT dealloc, dropped FROM pgss_ng_info'),
		'0|0', "$name: pgss_ng neither evicted nor dropped anything");
	is( $node->safe_psql('postgres',
			'SELECT dealloc FROM pg_stat_statements_info'),
		'0', "$name: pg_stat_statements evicted nothing");

	# Exact counts the workload caused (checked in pgss_ng's view; equality
	# with pg_stat_statements is checked above).
	my %oid = map { $_ => $node->safe_psql('postgres', "SELECT '$_'::regrole::oid") }
	  qw(alice bob carol);
	$oid{$_} = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$_'")
	  for qw(postgres db2);
	my ($A, $B, $C, $P, $D2) = @oid{qw(alice bob carol postgres db2)};
	my $S = 10;    # the bootstrap superuser

	# Each temporary table is a new relation, so each transaction of the
	# "extra" script makes new entries for the statements that use it
	# (before PostgreSQL 18, whose jumbling uses a table's name, not its
	# OID: one entry then).
	my @tmp = entries_of($ng, $A, $P, 't',
		'INSERT INTO tmp_work SELECT g, $1 || g FROM generate_series($2, $3) g');
	is(scalar(@tmp), $pg18 ? 1 : 2 * $T,
		"$name: one INSERT INTO tmp_work entry per temporary table");
	is(join(',', sort { $a <=> $b } (map { $_->{calls} } @tmp)),
		$pg18 ? 2 * $T : join(',', (1) x (2 * $T)),
		"$name: each INSERT INTO tmp_work entry was called once");

	# [ userid, dbid, toplevel, text, column, value ]; undef: no entry.
	# $U: what only utility tracking records; $F: what only failed after
	# planning (shown with calls 0 when planning is tracked).
	my $U = sub { $util ? $_[0] : undef };
	my $F = sub { $planning eq 'on' ? $_[0] : undef };
	# What the server normalizes differently: from PostgreSQL 16 the
	# constants of utility statements; from 18 lists of constants squashed
	# to one (the external parameters then renumbered), and no leading
	# comment in the text.
	my $utilconst = sub { $pg16 ? $_[1] : $_[0] };
	my $squashed = 'SELECT $1 + $2 AS f, $3 AS e, $4 AS d, $5 AS u, $6 AS b, $7 AS x, interval $8 AS i, $9 AS n, ARRAY[$10 /*, ... */] AS a, $11::int[] AS c, $12 IN ($13 /*, ... */) AS l';
	my @expect = (
		# simple protocol: constants normalized and merged (the psql
		# sessions also run the SELECT once each)
		[ $A, $P, 't', 'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 'calls', 3 * $T ],
		[ $A, $P, 't', 'SELECT balance FROM accounts WHERE id = $1', 'rows', 3 * $T + 2 ],
		[ $A, $P, 't', 'SELECT count(*) FROM history WHERE aid = $1 AND delta > $2 LIMIT $3', 'calls', 3 * $T ],
		[ $A, $P, 't', 'SELECT $1 + $2 AS n1', 'calls', 2 * $T ],
		[ $A, $P, 't', 'SELECT abs($1) AS lim1', 'calls', 2 * $T ],
		[ $A, $P, 't', 'SELECT count(*) FROM accounts WHERE balance > $1', 'calls', 2 * $T ],
		# extended + prepared share the entries (bob in db2)
		[ $B, $D2, 't', 'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 'calls', 2 * $T + 2 * $T2 ],
		[ $B, $D2, 't', 'SELECT count(*) FROM history WHERE aid = $1 AND delta > $2 LIMIT $3', 'calls', 2 * $T + 2 * $T2 ],
		[ $B, $D2, 't', 'SELECT small_bump($1)', 'rows', 2 * $T + 2 * $T2 ],
		# and with the pipelined statements; the psql session's constant
		# makes another entry with the same text
		[ $A, $D2, 't', 'SELECT balance FROM accounts WHERE id = $1', 'calls', '1,' . (2 * $T + 2 * $T) ],
		[ $B, $P, 't', 'SELECT count(*) FROM history WHERE aid = $1 AND delta > $2 LIMIT $3', 'calls', $T + 2 * $T ],
		# all sorts of literals, in both forms
		[ $A, $P, 't', $pg18 ? $squashed : 'SELECT $1 + $2 AS f, $3 AS e, $4 AS d, $5 AS u, $6 AS b, $7 AS x, interval $8 AS i, $9 AS n, ARRAY[$10, $11] AS a, $12::int[] AS c, $13 IN ($14, $15, $16) AS l', 'calls', 3 * $T ],
		[ $B, $D2, 't', $pg18 ? $squashed : 'SELECT $1 + $3 AS f, $4 AS e, $5 AS d, $6 AS u, $7 AS b, $8 AS x, interval $9 AS i, $10 AS n, ARRAY[$11, $12] AS a, $13::int[] AS c, $2 IN ($14, $15, $16) AS l', 'calls', 2 * $T + 2 * $T2 ],
		[ $A, $P, 't', "SELECT id, /* inline */ balance\n  FROM accounts\n  WHERE id = \$1 AND balance > \$2", 'rows', 3 * $T ],
		[ $A, $P, 't', 'MERGE INTO small s USING (SELECT $1 AS id) v ON s.id = v.id WHEN MATCHED THEN UPDATE SET x = s.x + $2 WHEN NOT MATCHED THEN INSERT VALUES (v.id, $3)', 'rows', 3 * $T ],
		[ $A, $P, 't', 'WITH ins AS (INSERT INTO history (aid, delta) VALUES ($1, $2) RETURNING id) SELECT count(*) FROM ins', 'rows', 3 * $T ],
		[ $A, $P, 't', 'SELECT $1 AS "naïve", $2 AS brûlée', 'calls', 3 * $T ],
		# db2 is LATIN1: each byte of the UTF-8 script is one character
		[ $B, $D2, 't', "SELECT \$1 AS \"na\xc3\x83\xc2\xafve\", \$2 AS br\xc3\x83\xc2\xbbl\xc3\x83\xc2\xa9e", 'calls', 2 * $T + 2 * $T2 ],
		# psql: each session inserts its row once; the second insert fails
		[ $A, $P, 't', 'INSERT INTO uniq (k) VALUES ($1)', 'calls', 2 ],
		[ $A, $P, 't', 'DELETE FROM uniq WHERE k = $1', 'rows', 2 ],
		# EXECUTE counts for the prepared statement, text and all
		[ $A, $P, 't', 'PREPARE getbal(int) AS SELECT balance, note FROM accounts WHERE id = $1', 'calls', 4 ],
		[ $A, $D2, 't', 'PREPARE getbal(int) AS SELECT balance, note FROM accounts WHERE id = $1', 'calls', 2 ],
		[ $A, $P, 't', 'SELECT $1 AS tag, $2 AS two', 'calls', 2 ],
		[ $A, $P, 't', 'SELECT count(*) AS big FROM accounts WHERE id IN (' . ($pg18 ? '$1 /*, ... */' : join(', ', map { "\$$_" } 1 .. 3000)) . ')', 'rows', 2 ],
		[ $A, $P, 't', ($pg18 ? '' : '/* commented */ ') . 'SELECT sum(balance) IS NOT NULL AS ok FROM accounts', 'calls', 2 ],
		# Deferred triggers fire at commit, after the statement that
		# commits (explicit COMMIT, autocommit, pipeline Sync): top level.
		# alice: 2 rows per transaction of "common", 1 from the CTE, 1 from
		# each DO block, 3 COPY rows and 2 fetched rows per psql session;
		# bob: the same without DO blocks, plus the pipelines.  Without
		# utility tracking, COPY's immediate triggers are top level too
		# (before PostgreSQL 17, see $nested_util).
		[ $A, $P, 't', 'INSERT INTO audit (aid, at_commit) VALUES (NEW.aid, TG_NAME = $15)', 'calls', 3 * $T * 3 + 2 * $T + 2 * 5 + ($nested_util ? 0 : 2 * 3) ],
		[ $B, $P, 't', 'INSERT INTO audit (aid, at_commit) VALUES (NEW.aid, TG_NAME = $15)', 'calls', $T * 3 + 2 * $T + 5 + ($nested_util ? 0 : 3) ],
		# a function evaluated while planning (constant folding) runs its
		# statements at top level (before PostgreSQL 17; then nested)
		[ $A, $P, 't', 'SELECT count(*)        FROM small WHERE id <= p', 'calls', $pg17 ? undef : 2 ],
		# parsed untracked: no normalized text
		[ $S, $P, 't', 'PREPARE late AS SELECT 2 + 3 AS late', 'calls', 2 ],
		[ $S, $P, 't', 'SELECT set_config($1, $2, $3) AS a, set_config($4, $5, $6) AS b', 'plans', $F->(1) ],
		# run as the role set: the SELECT, and SET ROLE itself (recorded
		# after it ran)
		[ $C, $P, 't', 'SELECT current_user AS who', 'calls', 3 ],
		[ $C, $D2, 't', 'SELECT current_user AS who', 'calls', 2 ],
		[ $C, $P, 't', 'SET ROLE carol', 'calls', $U->(3) ],
		[ $B, $P, 't', 'RESET ROLE', 'calls', $U->(1) ],
		# failed: never shown, whatever the settings
		[ $A, $P, 't', 'DO $$ BEGIN RAISE EXCEPTION \'boom\'; END $$', 'calls', undef ],
		[ $A, $P, 't', 'DROP TABLE no_such_table', 'calls', undef ],
		[ $A, $P, 't', 'SELECT $1 / $2', 'calls', undef ],
		# planned, then failed in the executor
		[ $A, $P, 't', 'INSERT INTO uniq SELECT $1', 'plans', $F->(2) ],
		[ $A, $P, 't', 'INSERT INTO uniq SELECT $1', 'calls', $F->(0) ],
		[ $A, $P, 't', 'SELECT fail_after($1)', 'plans', $F->(2) ],
		[ $A, $P, 't', 'SELECT fail_after($1)', 'calls', $F->(0) ],
		[ $A, $P, 't', 'SELECT $1 / (x - x) FROM small WHERE id = $2', 'calls', $F->(0) ],
		# utility statements
		[ $A, $P, 't', 'CREATE INDEX IF NOT EXISTS tmp_work_a ON tmp_work (a)', 'calls', $U->(2 * $T) ],
		[ $A, $P, 't', 'CREATE TEMP TABLE tmp_drop (x int)', 'calls', $U->(2 * $T) ],
		[ $A, $P, 't', 'VACUUM small', 'calls', $U->(2 * $T) ],
		[ $A, $P, 't', 'ANALYZE accounts', 'calls', $U->(2 * $T) ],
		[ $A, $P, 't', 'DO $$ BEGIN PERFORM transfer(7, 1); END $$', 'calls', $U->(2 * $T) ],
		[ $A, $P, 't', 'BEGIN', 'calls', $U->(2 * 3 * $T + 2 * $T + 2 * 2) ],
		[ $A, $P, 't', 'FETCH 3 FROM cur', 'rows', $U->(3 * 3 * $T) ],
		[ $A, $P, 't', 'COPY history (aid, delta) FROM STDIN', 'rows', $U->(6) ],
		[ $A, $P, 't', $utilconst->('CREATE TEMP TABLE tmp_ctas AS SELECT id FROM accounts WHERE id <= 7', 'CREATE TEMP TABLE tmp_ctas AS SELECT id FROM accounts WHERE id <= $1'), 'rows', $U->(14) ],
		[ $A, $P, 't', $utilconst->('SELECT id INTO TEMP tmp_into FROM accounts WHERE id <= 3', 'SELECT id INTO TEMP tmp_into FROM accounts WHERE id <= $1'), 'rows', $U->(6) ],
		[ $A, $P, 't', 'REFRESH MATERIALIZED VIEW mv_small', 'calls', $U->(2) ],
		[ $B, $D2, 't', 'REFRESH MATERIALIZED VIEW mv_small', 'calls', $U->(1) ],
		[ $A, $P, 't', 'COPY (SELECT id FROM accounts WHERE id <= 5 ORDER BY id) TO STDOUT', 'rows', $U->(10) ],
		[ $B, $P, 't', 'DECLARE cur CURSOR FOR SELECT id, balance FROM accounts ORDER BY id', 'calls', $U->($T) ],
		# A prepared utility statement counts at its first execution only
		# (pg_stat_statements clears the queryId of its cached statement),
		# until its plan is invalidated, which FETCH, BEGIN and SHOW never
		# are; 2 BEGIN per transaction, and two from a psql session.
		[ $B, $D2, 't', 'FETCH 3 FROM cur', 'rows', $U->(3 * (2 * $T + 2)) ],
		[ $B, $D2, 't', 'BEGIN', 'calls', $U->(2 * 2 * $T + 2 * 2 + 2) ],
		[ $B, $D2, 't', 'SHOW work_mem', 'calls', $U->(2 * $T + 2) ],
		[ $A, $D2, 't', 'SHOW work_mem', 'calls', $U->(2) ],
	);
	if ($all)
	{
		push @expect, (
			# the planner's function (PostgreSQL 17 and later)
			[ $A, $P, 'f', 'SELECT count(*)        FROM small WHERE id <= p', 'calls', $pg17 ? 2 : undef ],
			# the immediate trigger
			[ $A, $P, 'f', 'INSERT INTO audit (aid, at_commit) VALUES (NEW.aid, TG_NAME = $15)', 'calls', 3 * $T * 3 + 2 * $T + 2 * 5 ],
			# nested in transfer(): from SELECT transfer() (both protocols),
			# the DO block and the cursor (2 rows fetched per session)
			[ $A, $P, 'f', 'UPDATE accounts SET balance = balance + p_delta WHERE id = p_id', 'calls', 3 * $T + 2 * $T + 2 * 2 ],
			[ $B, $D2, 'f', 'UPDATE accounts SET balance = balance + p_delta WHERE id = p_id', 'calls', 2 * $T + 2 * $T2 + 2 ],
			[ $A, $P, 't', 'SELECT transfer($1, $2)', 'calls', 3 * $T ],
			[ $A, $P, 'f', 'SELECT transfer($1, $2)', 'calls', 2 * $T ],
			# nested in the SQL function: its parameter is $1
			[ $A, $P, 'f', 'UPDATE small SET x = x + sign(d)::int WHERE id = $2', 'calls', 3 * $T ],
			# nested, before the error of its caller
			[ $A, $P, 'f', 'UPDATE accounts SET note = $2 WHERE id = p', 'calls', 2 ],
			# a PL/pgSQL expression, planned, failing at run time
			[ $A, $P, 'f', '$2 / (p - p)', 'plans', 2 ],
			# nested in COPY and EXPLAIN
			[ $A, $P, 'f', 'COPY (SELECT id FROM accounts WHERE id <= $1 ORDER BY id) TO STDOUT', 'rows', 10 ],
			[ $A, $P, 'f', 'EXPLAIN (COSTS OFF) SELECT id FROM accounts WHERE id = $1;', 'plans', 2 ],
			[ $A, $P, 'f', 'SELECT $1 / $2', 'plans', undef ],
			# nested in a DO block that was cancelled
			[ $A, $P, 't', 'UPDATE small SET x = x WHERE id = $1', 'calls', 2 ],
			[ $A, $P, 'f', 'UPDATE small SET x = x WHERE id = $1', 'calls', 2 ],
			# nested in a DO block whose session was terminated
			[ $A, $P, 'f', 'UPDATE small SET x = x + $1 WHERE id = $2', 'calls', 1 ],
			# 300 distinct dynamic statements in one DO block
			[ $A, $P, 'f', 'SELECT $1 * $2', 'calls', 2 ],
			[ $B, $D2, 'f', 'SELECT ' . join(' * ', map { "\$$_" } 1 .. 301), 'calls', 1 ],
		);
	}
	elsif ($nested_util)
	{
		# track = top: nothing nested (without utility tracking too from
		# PostgreSQL 17, where what utility statements run is nested)
		push @expect, (
			[ $A, $P, 'f', 'UPDATE accounts SET balance = balance + p_delta WHERE id = p_id', 'calls', undef ],
			[ $A, $P, 't', 'SELECT transfer($1, $2)', 'calls', 3 * $T ],
			[ $A, $P, 'f', 'SELECT transfer($1, $2)', 'calls', undef ],
			[ $A, $P, 't', 'UPDATE small SET x = x WHERE id = $1', 'calls', 2 ],
			[ $A, $P, 't', 'SELECT $1 * $2', 'calls', undef ],
			[ $A, $P, 't', 'UPDATE small SET x = x + $1 WHERE id = $2', 'calls', undef ],
		);
	}
	else
	{
		# track = top without utility tracking: what utility statements
		# run (DO blocks, COPY, EXPLAIN) is top-level, but not what a
		# function called from a top-level query runs.
		push @expect, (
			[ $A, $P, 'f', 'UPDATE accounts SET balance = balance + p_delta WHERE id = p_id', 'calls', undef ],
			[ $A, $P, 't', 'UPDATE accounts SET balance = balance + p_delta WHERE id = p_id', 'calls', undef ],
			[ $A, $P, 't', 'SELECT transfer($1, $2)', 'calls', 3 * $T + 2 * $T ],
			[ $A, $P, 't', 'UPDATE small SET x = x WHERE id = $1', 'calls', 2 + 2 ],
			[ $A, $P, 't', 'SELECT $1 * $2', 'calls', 2 ],
			[ $B, $D2, 't', 'SELECT ' . join(' * ', map { "\$$_" } 1 .. 301), 'calls', 1 ],
			[ $A, $P, 't', 'COPY (SELECT id FROM accounts WHERE id <= $1 ORDER BY id) TO STDOUT', 'rows', 10 ],
			[ $A, $P, 't', 'EXPLAIN (COSTS OFF) SELECT id FROM accounts WHERE id = $1;', 'plans', 2 ],
			[ $A, $P, 't', 'UPDATE accounts SET note = $2 WHERE id = p', 'calls', undef ],
			[ $A, $P, 't', 'UPDATE small SET x = x + $1 WHERE id = $2', 'calls', 1 ],
		);
	}
	for my $e (@expect)
	{
		my ($u, $d, $tl, $text, $col, $want) = @$e;
		is(value_of($ng, $u, $d, $tl, $text, $col), $want,
			"$name: $col of [" . show_text($text) . "] (toplevel $tl)");
	}

	# Failures of the psql sessions (two of alice's in postgres): each
	# statement that failed once per session has 2 errors; one that fails
	# every time has no call.
	for my $e (
		[ 'SELECT $1 / (x - x) FROM small WHERE id = $2', 'errors', 2 ],
		[ 'SELECT $1 / (x - x) FROM small WHERE id = $2', 'calls',  0 ],
		[ 'INSERT INTO uniq SELECT $1',                   'errors', 2 ],
		[ 'INSERT INTO uniq (k) VALUES ($1)',             'errors', 2 ],
		[ 'INSERT INTO uniq (k) VALUES ($1)',             'calls',  2 ])
	{
		my ($text, $col, $want) = @$e;
		is(value_of($ng_all, $A, $P, 't', $text, $col), $want,
			"$name: $col of [" . show_text($text) . "] (failures)");
	}

	$node->stop;
}

run_scenario('top',    'top', 'on',  'off');
run_scenario('all',    'all', 'on',  'on');
run_scenario('noutil', 'top', 'off', 'on');

done_testing();
