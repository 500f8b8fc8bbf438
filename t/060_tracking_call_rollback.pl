# A CALL whose procedure ends its transaction, sent through the extended
# protocol with a parameter: the ROLLBACK inside releases the portal's
# cached plan, the only reference to the CALL's custom plan, and so frees
# the PlannedStmt that ProcessUtility was given (issue 25).  No hook may
# touch it afterwards.
#
# gdb part: pgbench (-M extended, one CALL) waits on an advisory lock the
# test holds; gdb attaches to its backend and stops it at the entry of
# pgss_ng_ProcessUtility, the outermost ProcessUtility hook
# (shared_preload_libraries = 'pg_stat_statements,pgss_ng'), reads pstmt
# and follows the call down:
#   phase 1, hook entry to standard_ProcessUtility's entry (before the
#            statement runs): a hardware watchpoint on &pstmt->queryId
#            logs each change (value, writer) and lets the backend go on;
#            exactly one, the queryid cleared, by pgss_ng when it tracks
#            utility statements, else by the pg_stat_statements below it
#            (pgss_ng then passes the statement down as it is);
#   phase 2, while standard_ProcessUtility runs: no watchpoint; a
#            breakpoint on ReleaseCachedPlan logs each plan released (its
#            reference count, its first statement): the plan holding
#            pstmt must be released with its last reference, so freed;
#   phase 3, from standard_ProcessUtility's return to the hook's return
#            (the hooks' code after the call): a hardware access
#            watchpoint (reads and writes) on the freed &pstmt->queryId;
#            nothing from pgss_ng may touch it.
# Every step waits for what gdb prints (a breakpoint reached), never for a
# time.  Four settings: track = top or all, pgss_ng.track_utility on or
# off (pg_stat_statements: the same track, track_utility on).
#
# Then: with pgss_ng not tracking utility statements, pg_stat_statements
# counts as it does alone (it clears the queryid of the cached plan of a
# utility statement in a PL/pgSQL function, which it so counts once per
# session); and a stress run of such CALLs (ROLLBACK and COMMIT inside)
# under pgbench -M extended, 4 clients, whose exact counts, nested
# statements included (track = all), both extensions must agree on.
# Needs gdb, permission to ptrace a backend and an x86-64 machine: the
# whole file is skipped otherwise.
use strict;
use warnings;

use Config;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PgssNgTest;

plan skip_all => 'gdb is not installed' unless gdb_installed();
# The breakpoints read the arguments in rdi and the return address at rsp.
plan skip_all => 'the gdb part reads x86-64 registers'
  unless $Config{archname} =~ /^x86_64/;

my $tmp = PostgreSQL::Test::Utils::tempdir;

# The offsets gdb needs (the servers of 16-18 have no debug information):
# PlannedStmt.queryId, CachedPlan.stmt_list and .refcount, List.elements,
# from a program compiled with this server's headers.
my %off;
{
	my $inc = `pg_config --includedir-server`;
	chomp $inc;
	my $cc = `pg_config --cc`;
	chomp $cc;
	$cc = 'cc' unless $cc;
	PostgreSQL::Test::Utils::append_to_file(
		"$tmp/offsets.c", q{#include "postgres.h"
#include "nodes/pg_list.h"
#include "nodes/plannodes.h"
#include "utils/plancache.h"
#include <stdio.h>
#undef printf
int
main(void)
{
	printf("queryid %zu\n", offsetof(PlannedStmt, queryId));
	printf("stmt_list %zu\n", offsetof(CachedPlan, stmt_list));
	printf("refcount %zu\n", offsetof(CachedPlan, refcount));
	printf("elements %zu\n", offsetof(List, elements));
	return 0;
}
});
	my ($out, $err) = run_command(
		[ split(' ', $cc), '-I', $inc, '-o', "$tmp/offsets", "$tmp/offsets.c" ]);
	ok(-x "$tmp/offsets", 'offsets helper compiled') or diag("$out\n$err");
	($out, $err) = run_command(["$tmp/offsets"]);
	%off = $out =~ /^(\w+) (\d+)$/mg;
	is(join(' ', sort keys %off), 'elements queryid refcount stmt_list',
		'offsets read') or diag("$out\n$err");
}

# Both extensions with their defaults (track top, track_utility on,
# track_planning off); each client sets what its part needs.
my $node = pgss_node(
	'call_rollback',
	'shared_preload_libraries' => 'pg_stat_statements,pgss_ng',
	'pgss_ng.save' => 'off');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION pgss_ng;
CREATE TABLE uaf_t (x int);
CREATE TABLE uaf_c (x int);
CREATE PROCEDURE uaf_p2(n int) LANGUAGE plpgsql AS $$
BEGIN INSERT INTO uaf_t VALUES (n); ROLLBACK; PERFORM repeat('x', 100000 + n); END $$;
CREATE PROCEDURE uaf_c2(n int) LANGUAGE plpgsql AS $$
BEGIN INSERT INTO uaf_c VALUES (n); COMMIT; PERFORM lpad('y', 100 + n); END $$;
CREATE FUNCTION uaf_trunc() RETURNS void LANGUAGE plpgsql AS $$
BEGIN TRUNCATE uaf_t; END $$;
});

# The test's own sessions are tracked by neither extension.
$ENV{PGOPTIONS} = '-c pgss_ng.track=none -c pg_stat_statements.track=none';

my @conn = ('-h', $node->host, '-p', $node->port);
my $reset = 'SELECT pg_stat_statements_reset() IS NOT NULL, pgss_ng_reset() IS NOT NULL';

# --- gdb: no write through pstmt after the plan is released ---------------------

my $lock = $node->background_psql('postgres');
$lock->set_query_timer_restart;
my $pid0 = $lock->query_safe('SELECT pg_backend_pid()');
{
	my ($attached, $out, $why) =
	  gdb_probe($pid0, qw(pgss_ng_ProcessUtility standard_ProcessUtility ReleaseCachedPlan));
	if (!$attached)
	{
		$lock->quit;
		$node->stop;
		plan skip_all => "gdb cannot attach to a backend: $why";
	}
	like($out, qr/Symbol "\Q$_\E" is/, "gdb finds $_")
	  for qw(pgss_ng_ProcessUtility standard_ProcessUtility ReleaseCachedPlan);
}

my $call_script = "$tmp/call_one.sql";
PostgreSQL::Test::Utils::append_to_file(
	$call_script, q{\set n 7
SELECT pg_advisory_xact_lock(25);
CALL uaf_p2(:n);
});

# The text ranges of the libraries loaded in the backend gdb is attached
# to: [from, to, name], name 'pgss_ng' or 'pg_stat_statements' (their
# symbols may be stripped: the address tells).
sub library_ranges
{
	my ($g) = @_;
	no warnings 'portable';    # 64-bit addresses
	gdb_send($g, 'info sharedlibrary', 'echo @@libs done@@\n');
	my $out = gdb_wait($g, qr/\@\@libs done\@\@/) // '';
	my @r;
	while ($out =~ m{^(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s.*/(pgss_ng|pg_stat_statements)\.so$}mg)
	{
		push @r, [ hex($1), hex($2), $3 ];
	}
	return @r;
}

# What a watchpoint's commands logged in gdb output $out: a list of
# [value after the access, who, where], who being 'pgss_ng',
# 'pg_stat_statements' or 'server' (from the library ranges @$libs that
# hold the instruction after the access), where the function and offset
# if gdb knows them.
sub accesses_in
{
	my ($out, $libs) = @_;
	my @w;
	while ($out =~ /\@\@(?:write|access) (-?\d+) (\d+)\@\@\n(.*)\n/g)
	{
		my ($value, $pc, $where) = ($1, $2, $3);
		my ($lib) = grep { $pc >= $_->[0] && $pc < $_->[1] } @$libs;
		push @w,
		  [
			$value, $lib ? $lib->[2] : 'server',
			$where =~ s/ in section .*//r
		  ];
	}
	return @w;
}

sub show_accesses
{
	return join(', ', map { "$_->[1]:$_->[0]" } @_) || 'none';
}

sub show_accesses_where
{
	return join(', ', map { "$_->[2] ($_->[1]): $_->[0]" } @_) || 'none';
}

# Wait for gdb to stop at the temporary breakpoint number $n; the output
# before it, or undef.
sub stopped_at_tbreak
{
	my ($g, $n) = @_;
	my $out = gdb_wait($g, qr/Temporary breakpoint $n, [^\n]*\n/);
	$g->{stopped} = defined $out;
	return $out;
}

# Set a temporary breakpoint at $where; its number.
sub tbreak
{
	my ($g, $where) = @_;
	gdb_send($g, "tbreak $where");
	my $out = gdb_wait($g, qr/Temporary breakpoint (\d+) at /) // '';
	return ($out =~ /Temporary breakpoint (\d+) at /)[0];
}

for my $case ([ 'top', 'on' ], [ 'top', 'off' ], [ 'all', 'on' ],
	[ 'all', 'off' ])
{
	my ($track, $utility) = @$case;
	my $name = "track $track, track_utility $utility";
	$node->safe_psql('postgres', $reset);

	$lock->query_safe('SELECT pg_advisory_lock(25)');
	my ($bout, $berr) = ('', '');
	my $bench;
	{
		local $ENV{PGOPTIONS} =
		    "-c pgss_ng.track=$track -c pgss_ng.track_utility=$utility "
		  . "-c pg_stat_statements.track=$track";
		local $ENV{PGAPPNAME} = 'uaf_bench';
		$bench = IPC::Run::start(
			[
				'pgbench', @conn, '-n', '-M', 'extended', '-c', '1',
				'-t', '1', '-f', $call_script, 'postgres'
			],
			'>', \$bout, '2>', \$berr,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	}
	my ($g, $entry, $qid, $pstmt, @phase1, @phase3, $released);
  SCENARIO:
	{
		last SCENARIO
		  unless ok(
			$node->poll_query_until(
				'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
				  WHERE application_name = 'uaf_bench'
					AND wait_event_type = 'Lock' AND wait_event = 'advisory'}),
			"$name: pgbench waits on the advisory lock");
		my $pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE application_name = 'uaf_bench'});
		last SCENARIO
		  unless ok(!library_replaced($pid),
			"$name: pgss_ng.so on disk is the one the server loaded");

		$g = gdb_start($pid);
		my @libs = library_ranges($g);
		last SCENARIO
		  unless is(join(' ', sort map { $_->[2] } @libs),
			'pg_stat_statements pgss_ng',
			"$name: gdb sees where both libraries are");
		gdb_send($g, 'tbreak *pgss_ng_ProcessUtility', 'continue');
		last SCENARIO
		  unless ok(defined gdb_wait($g, qr/Continuing\./),
			"$name: gdb attached");
		$lock->query_safe('SELECT pg_advisory_unlock(25)');
		last SCENARIO
		  unless ok(stopped_in($g, 'pgss_ng_ProcessUtility'),
			"$name: stopped at the entry of pgss_ng_ProcessUtility");

		# x86-64: the first argument (pstmt) in rdi, the return address
		# at the top of the stack.
		gdb_send(
			$g,
			"set \$qid = (unsigned long *) ((char *) \$rdi + $off{queryid})",
			'printf "@@entry %lu %ld %lu@@\n", (unsigned long) $rdi, *(long *) $qid, *(unsigned long *) $rsp');
		$entry = gdb_wait($g, qr/\@\@entry \d+ -?\d+ \d+\@\@/) // '';
		my $ret1;
		($pstmt, $qid, $ret1) = $entry =~ /\@\@entry (\d+) (-?\d+) (\d+)\@\@/;
		last SCENARIO
		  unless ok(defined $qid && $qid ne '0',
			"$name: pstmt->queryId is set at the hook's entry");

		gdb_send($g, 'watch -l *$qid', 'commands', 'silent',
			'printf "@@write %ld %lu@@\n", *(long *) $qid, (unsigned long) $pc',
			'info symbol $pc', 'continue', 'end');
		my $w = gdb_wait($g, qr/atchpoint \d+: -location/) // '';
		like($w, qr/Hardware watchpoint \d+: -location/,
			"$name: a hardware watchpoint on &pstmt->queryId");
		my ($wnum) = $w =~ /atchpoint (\d+): -location/;
		last SCENARIO unless defined $wnum;

		tbreak($g, '*standard_ProcessUtility');
		gdb_send($g, 'continue');
		my $out = gdb_wait($g, gdb_stop_re('standard_ProcessUtility'));
		$g->{stopped} = defined $out;
		last SCENARIO
		  unless ok(defined $out, "$name: reached standard_ProcessUtility");
		@phase1 = accesses_in($out, \@libs);

		# Phase 2: no watchpoint; each ReleaseCachedPlan logs the plan's
		# reference count and first statement.
		gdb_send(
			$g, "delete $wnum",
			'break *ReleaseCachedPlan');
		my $r = gdb_wait($g, qr/Breakpoint \d+ at /) // '';
		my ($rnum) = $r =~ /Breakpoint (\d+) at /;
		last SCENARIO unless ok(defined $rnum, "$name: breakpoint on ReleaseCachedPlan");
		gdb_send(
			$g, 'commands', 'silent',
			"set \$sl = *(char **) ((char *) \$rdi + $off{stmt_list})",
			'if $sl != 0',
			"printf \"\@\@release %d %lu\@\@\\n\", *(int *) ((char *) \$rdi + $off{refcount}), *(unsigned long *) *(char **) (\$sl + $off{elements})",
			'end', 'continue', 'end');
		gdb_send($g, 'printf "@@ret %lu@@\n", *(unsigned long *) $rsp');
		my ($ret2) = (gdb_wait($g, qr/\@\@ret \d+\@\@/) // '') =~ /\@\@ret (\d+)\@\@/;
		last SCENARIO unless defined $ret2;
		# a literal address: gdb evaluates an expression again when a
		# library is loaded (plpgsql.so, by the CALL)
		$ret2 = tbreak($g, sprintf('*0x%x', $ret2));
		gdb_send($g, 'continue');
		$out = stopped_at_tbreak($g, $ret2);
		last SCENARIO
		  unless ok(defined $out, "$name: standard_ProcessUtility returned");
		# a release of the plan whose first statement is pstmt, with its
		# last reference
		my @rel = $out =~ /\@\@release (\d+ \d+)\@\@/g;
		$released = grep { $_ eq "1 $pstmt" } @rel;
		note("$name: pstmt $pstmt; ReleaseCachedPlan (refcount, first statement): "
			  . join(', ', @rel));

		# Phase 3: any access, read or write.
		gdb_send($g, "delete $rnum", 'awatch -l *$qid', 'commands', 'silent',
			'printf "@@access %ld %lu@@\n", *(long *) $qid, (unsigned long) $pc',
			'info symbol $pc', 'continue', 'end');
		$w = gdb_wait($g, qr/atchpoint \d+: -location/) // '';
		like($w, qr/Hardware access \(read\/write\) watchpoint \d+: -location/,
			"$name: a hardware access watchpoint on &pstmt->queryId");
		$ret1 = tbreak($g, sprintf('*0x%x', $ret1));
		gdb_send($g, 'continue');
		$out = stopped_at_tbreak($g, $ret1);
		last SCENARIO
		  unless ok(defined $out, "$name: pgss_ng_ProcessUtility returned");
		@phase3 = accesses_in($out, \@libs);
	}
	gdb_release($g) if $g;
	$lock->query_safe('SELECT pg_advisory_unlock_all()');

	my $who = $utility eq 'on' ? 'pgss_ng' : 'pg_stat_statements';
	is(show_accesses(@phase1), "$who:0",
		"$name: before the statement ran, the queryid was cleared once, by $who");
	ok($released, "$name: the CALL's plan was freed while it ran");
	is(show_accesses_where(grep { $_->[1] eq 'pgss_ng' } @phase3),
		'none', "$name: pgss_ng did not read or write pstmt->queryId after the call");
	note("$name: accesses after the call: " . show_accesses_where(@phase3));

	ok(eval { $bench->finish }, "$name: pgbench succeeded")
	  or diag("pgbench stdout:\n$bout\nstderr:\n$berr");
	like($bout, qr/^number of transactions actually processed: 1\/1$/m,
		"$name: pgbench ran its transaction");
	# its exit flush done
	ok( $node->poll_query_until(
			'postgres', q{SELECT count(*) = 0 FROM pg_stat_activity
			  WHERE application_name = 'uaf_bench'}),
		"$name: the pgbench backend has exited");
	is( $node->safe_psql(
			'postgres',
			q{SELECT queryid || ' ' || calls FROM pg_stat_statements
			  WHERE query = 'CALL uaf_p2($1)' AND toplevel}),
		"$qid 1",
		"$name: pg_stat_statements counted the CALL whose queryid gdb saw");
	is( $node->safe_psql(
			'postgres',
			q{SELECT coalesce(string_agg(queryid || ' ' || calls, ','), 'none')
			  FROM pgss_ng WHERE query = 'CALL uaf_p2($1)' AND toplevel}),
		$utility eq 'on' ? "$qid 1" : 'none',
		"$name: pgss_ng counted the CALL if it tracks utility statements");
}
$lock->quit;

# --- pgss_ng not tracking utility statements: pg_stat_statements unchanged ----

# A utility statement in a PL/pgSQL function runs from the function's cached
# plan; pg_stat_statements clears its queryid, so it counts it once per
# session (the plan is cached per session), whatever pgss_ng tracks.
$node->safe_psql('postgres', $reset);
for my $utility ('on', 'off')
{
	local $ENV{PGOPTIONS} =
	    "-c pgss_ng.track=all -c pgss_ng.track_utility=$utility "
	  . '-c pg_stat_statements.track=all';
	$node->safe_psql('postgres',
		'SELECT uaf_trunc(); SELECT uaf_trunc(); SELECT uaf_trunc();');
}
is( $node->safe_psql(
		'postgres',
		q{SELECT (SELECT calls FROM pg_stat_statements WHERE query = 'TRUNCATE uaf_t')
			 || ' ' || (SELECT calls FROM pgss_ng WHERE query = 'TRUNCATE uaf_t')}),
	'2 1',
	'TRUNCATE in a function, 2 sessions x 3 calls: pg_stat_statements counts 1 per session, pgss_ng 1 (the session where it tracks)'
);

# --- stress: many such CALLs, exact counts ------------------------------------

$node->safe_psql('postgres', 'TRUNCATE uaf_t, uaf_c');
$node->safe_psql('postgres', $reset);
my $stress_script = "$tmp/call_stress.sql";
PostgreSQL::Test::Utils::append_to_file(
	$stress_script, q{\set n random(0, 999)
CALL uaf_p2(:n);
CALL uaf_c2(:n);
});
my ($clients, $xacts) = (4, 1000);
my $n = $clients * $xacts;
{
	local $ENV{PGOPTIONS} =
	  '-c pgss_ng.track=all -c pg_stat_statements.track=all';
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[
			'pgbench', @conn, '-n', '-M', 'extended', '-c', $clients,
			'-j', '2', '-t', $xacts, '-f', $stress_script, 'postgres'
		],
		'>', \$out, '2>', \$err);
	ok($ok, 'stress: pgbench succeeded') or diag("stdout:\n$out\nstderr:\n$err");
	like($out, qr/^number of transactions actually processed: $n\/$n$/m,
		"stress: pgbench ran $n transactions");
}
wait_for_clients_gone($node, 'stress: every pgbench backend has exited');
is($node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM uaf_t) || \' \' || (SELECT count(*) FROM uaf_c)'),
	"0 $n", 'stress: the ROLLBACKs and COMMITs took effect');

my $by_text = q{
SELECT string_agg(format('%s %s %s', query, toplevel, calls), E'\n' ORDER BY query, toplevel)
FROM VIEW};
my $want = join("\n",
	"CALL uaf_c2(\$1) t $n",
	"CALL uaf_p2(\$1) t $n",
	"INSERT INTO uaf_c VALUES (n) f $n",
	"INSERT INTO uaf_t VALUES (n) f $n",
	"SELECT lpad(\$2, \$3 + n) f $n",
	"SELECT repeat(\$2, \$3 + n) f $n");
is($node->safe_psql('postgres', $by_text =~ s/VIEW/pg_stat_statements/r),
	$want, 'stress: pg_stat_statements counted every statement');
is($node->safe_psql('postgres', $by_text =~ s/VIEW/pgss_ng/r),
	$want, 'stress: pgss_ng counted every statement');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pgss_ng n
FULL JOIN pg_stat_statements p USING (userid, dbid, queryid, toplevel)
WHERE n.calls IS DISTINCT FROM p.calls OR n.rows IS DISTINCT FROM p.rows
   OR n.query IS DISTINCT FROM p.query}),
	'0',
	'stress: same keys, calls, rows and texts as pg_stat_statements');
is($node->safe_psql('postgres', 'SELECT dropped FROM pgss_ng_info'),
	'0', 'stress: nothing dropped');

stop_and_check_log($node);

done_testing();
