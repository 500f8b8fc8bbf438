# A reset while the writer restores the stats file wins.  A full one:
# nothing restored before it survives it, nothing saved is restored after
# it, and stats_reset stays the reset's time (the saved, older one never
# comes back).  A partial one (one role's statements), made before the
# writer restores anything: none of that role's saved entries or rows of
# the evicted remainder is restored after it, all of the other role's
# are, and the log line counts those it kept out.
#
# Holding the restore: the writer restores at its start, before a test
# could attach gdb to it.  So gdb attaches to the postmaster instead, in
# non-stop mode and following every process it forks (detach-on-fork off)
# with a breakpoint on pgss_ng_stmt_restore_record (the restore of one
# record) ignored twice.  The test then puts a saved stats file back into
# pg_stat/ and kills a backend with SIGKILL: the postmaster reinitializes
# shared memory and starts a new writer, which, finding the statistics not
# yet loaded, restores the file and stops at its third record, two
# restored.  Every other process is detached from gdb (only that thread
# stopped meanwhile), the test resets, and lets the writer go.  Twice:
# a full reset, then a partial one.  No step waits for a time.
#
# Needs gdb and permission to ptrace (scripts/test.sh lowers
# kernel.yama.ptrace_scope for its run): otherwise the whole file is
# skipped, saying why.
use strict;
use warnings;

use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

plan skip_all => 'gdb is not installed' unless gdb_installed();

my $node = pgss_node(
	'reset_restore',
	'pgss_ng.max' => 5000,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on',
	# no process the postmaster forks while gdb follows it but its own
	'autovacuum' => 'off',
	'restart_after_crash' => 'on');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 10);
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

sub quiet_psql
{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', shift);
}

my $statfile = $node->data_dir . '/pg_stat/pgss_ng.stat';
my $saved = $node->basedir . '/pgss_ng.stat.saved';

# 50 entries, saved by a clean stop; the file is kept aside.
quiet_psql("SELECT pgss_ng_reset();\nSET pgss_ng.track = top;\n"
	  . join('', map { sprintf("SELECT c%d, c%d FROM w;\n", int($_ / 10) + 1, $_ % 10 + 1) }
		  0 .. 49));
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '50', '50 entries to save');
$node->stop;
ok(copy($statfile, $saved), 'the stats file is kept aside');
my $pos = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/pgss_ng restored 50 statement entries/, $pos);
my $saved_reset = quiet_psql('SELECT stats_reset FROM pgss_ng_info');

# Can gdb attach to the postmaster?  It must find the breakpoint's function.
my ($pmpid) = slurp_file($node->data_dir . '/postmaster.pid') =~ /^(\d+)/;
{
	my ($attached, $out, $why) =
	  gdb_probe($pmpid, 'pgss_ng_stmt_restore_record');
	if (!$attached)
	{
		$node->stop;
		plan skip_all => "gdb cannot attach to the postmaster: $why";
	}
	like($out, qr/Symbol "pgss_ng_stmt_restore_record" is/,
		'gdb finds pgss_ng_stmt_restore_record');
}

# gdb on the postmaster, in non-stop mode (gdb_start's handle, driven
# with gdb_send and gdb_wait).  Its waits are bounded by a timer, and return false rather
# than die, so that a failed wait still lets the processes go.
my $g;

# Remove the breakpoint and quit gdb, which detaches every process it still
# holds, stopped or not (gdb_release detaches one inferior only).
sub gdb_quit
{
	return if !$g || $g->{quit}++;
	gdb_send($g, 'delete', 'quit') if $g->{h}->pumpable;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	$g->{h}->pump while $g->{h}->pumpable && !$g->{timer}->is_expired;
	$g->{h}->kill_kill if $g->{h}->pumpable;
	$g->{h}->finish;
	return;
}

# hold_restore(SAVED, WHAT, FUNCTION, IGNORE): put the stats file SAVED
# back in pg_stat/, crash a backend and hold the new writer when it calls
# FUNCTION the IGNORE + 1st time (pgss_ng_stmt_restore_record, 2: at its
# third record, two restored), every other process let go.  Returns the
# log position before the crash.
sub hold_restore
{
	my ($file, $what, $fn, $ignore) = @_;
	my ($pm) = slurp_file($node->data_dir . '/postmaster.pid') =~ /^(\d+)/;

	# every process's signals pass, none stops it
	$g = gdb_start($pm, non_stop => 1);
	gdb_send($g,
		'set detach-on-fork off',
		'set follow-fork-mode parent',
		"break $fn",
		($ignore ? ("ignore 1 $ignore") : ()),
		'continue -a &',
		'echo @@attached@@\n');
	ok(defined gdb_wait($g, qr/\@\@attached\@\@/), "$what: gdb follows the postmaster");

	# The saved file back in place, then a crash: the new writer restores it.
	ok(copy($file, $statfile), "$what: the saved stats file is back in pg_stat/");
	my $victim = $node->background_psql('postgres', on_error_stop => 0);
	my $vpid = $victim->query_safe('SELECT pg_backend_pid()');
	my $at = -s $node->logfile;
	ok(kill('KILL', $vpid), "$what: SIGKILL to backend $vpid");

	my $stop = gdb_wait($g,
		qr/Thread (\d+)\.\d+ [^\n]* hit Breakpoint 1(?:\.\d+)?, (?:0x[0-9a-f]+ in )?$fn \(/
	);
	my ($writer_inf) = ($stop // '') =~ /Thread (\d+)\.\d+ [^\n]* hit Breakpoint/;
	ok(defined $writer_inf, "$what: the new writer stopped in $fn");
	# Let every other process go: the postmaster first (no more forks seen).
	gdb_send($g, 'info inferiors', 'echo @@listed@@\n');
	my $list = gdb_wait($g, qr/\@\@listed\@\@/) // '';
	my @others = grep { $_ != ($writer_inf // 0) }
	  $list =~ /^\*?\s+(\d+)\s+process \d+/mg;
	gdb_send($g, 'detach inferiors ' . join(' ', sort { $a <=> $b } @others),
		'echo @@detached@@\n');
	ok(defined gdb_wait($g, qr/\@\@detached\@\@/), "$what: the other processes are let go");
	eval { $victim->quit; };
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		ok($node->poll_query_until('postgres', 'SELECT true'),
			"$what: the server accepts connections again");
	}
	return $at;
}

$pos = hold_restore($saved, 'full reset', 'pgss_ng_stmt_restore_record', 2);
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '2',
	'during the restore: the first two records are restored');

my $reset_at = quiet_psql('SELECT pgss_ng_reset()');
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '0', 'the reset removed them');

# Let the writer go on.
gdb_quit();
$node->wait_for_log(qr/pgss_ng restored/, $pos);

is(quiet_psql('SELECT entries || \' \' || entries_allocated FROM pgss_ng_info'),
	'0 0', 'after the restore: no entry restored after the reset');
is(quiet_psql('SELECT count(*) FROM pgss_ng'), '0', 'after the restore: the view is empty');
is(quiet_psql('SELECT stats_reset FROM pgss_ng_info'), $reset_at,
	'after the restore: stats_reset is the reset\'s time');
isnt($reset_at, $saved_reset, 'which is not the saved one');
like(slurp_file($node->logfile, $pos),
	qr/pgss_ng restored no statement entries from "pg_stat\/pgss_ng\.stat": all statistics were reset during the restore\n[^\n]*DETAIL:  The reset removed the 2 entries restored before it; the other 48 saved entries/,
	'the log line says the reset stopped the restore');

# Counting goes on as usual.
quiet_psql('SET pgss_ng.track = top; SELECT c1 FROM w');
is(quiet_psql("SELECT calls FROM pgss_ng WHERE query = 'SELECT c1 FROM w'"),
	'1', 'a statement after the restore is counted');
gdb_quit();

# A partial reset: roles ra and rb each run 120 statements at max 100, so
# that the saved file holds entries and rows of the evicted remainder of
# both.  The writer is held before it restores anything (the info block
# and the remainder's rows come first), ra's statistics are reset, and
# nothing of ra's comes back, while all of rb's does.
create_wide_table($node, 'pw', 20);
quiet_psql("CREATE ROLE ra LOGIN; CREATE ROLE rb LOGIN; GRANT SELECT ON pw TO ra, rb;\n"
	  . "ALTER ROLE ra SET pgss_ng.track = top; ALTER ROLE rb SET pgss_ng.track = top;\n"
	  . "ALTER SYSTEM SET pgss_ng.max = 100; SELECT pg_reload_conf();");
# the value the writer publishes, not this session's setting
$node->poll_query_until('postgres', 'SELECT entries_max = 100 FROM pgss_ng_info')
  or die 'pgss_ng.max = 100 not in force';
quiet_psql('SELECT pgss_ng_reset()');
# in turn, one session each, so that both keep entries (eviction goes by
# usage, then age)
my %session = map {
	$_ => $node->background_psql('postgres', extra_params => [ '-U', $_ ])
} ('ra', 'rb');
for my $i (0 .. 119)
{
	$session{$_}->query_safe(sprintf('SELECT c%d, c%d FROM pw', int($i / 20) + 1, $i % 20 + 1))
	  for ('ra', 'rb');
}
$_->quit for values %session;
quiet_psql('ALTER SYSTEM RESET pgss_ng.max; SELECT pg_reload_conf();');
# the session's last counts are flushed at its exit
wait_for_clients_gone($node, 'partial reset: the statements\' session');
my $of = "SELECT %s FROM %s WHERE userid = '%s'::regrole";
my %entries = map { $_ => quiet_psql(sprintf($of, 'count(*)', 'pgss_ng', $_)) } ('ra', 'rb');
my $rb_rows = quiet_psql(sprintf($of, "string_agg(toplevel || ' ' || entries || ' ' || calls, ',')",
		'pgss_ng_evicted', 'rb'));
my $rb_entries = quiet_psql(
	sprintf($of, "string_agg(queryid || ' ' || calls, ',' ORDER BY queryid)", 'pgss_ng', 'rb'));
cmp_ok($entries{ra}, '>', 0, "partial reset: ra has $entries{ra} entries to save");
cmp_ok($entries{rb}, '>', 0, "partial reset: rb has $entries{rb} entries to save");
like(quiet_psql(sprintf($of, 'count(*)', 'pgss_ng_evicted', 'ra')), qr/^[1-9]/,
	'partial reset: ra has rows of the evicted remainder to save');
like($rb_rows, qr/^true \d+ \d+$/, "partial reset: so has rb ($rb_rows)");
$node->stop;
my $saved2 = $node->basedir . '/pgss_ng.stat.saved2';
ok(copy($statfile, $saved2), 'partial reset: the stats file is kept aside');
# the writer restores (and removes) the file at this start: wait for it
$pos = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/pgss_ng restored/, $pos);

$pos = hold_restore($saved2, 'partial reset', 'pgss_ng_stmt_restore_info', 0);
is(quiet_psql('SELECT entries FROM pgss_ng_info'), '0',
	'partial reset: nothing restored yet');
quiet_psql("SELECT pgss_ng_reset('ra'::regrole)");
gdb_quit();
$node->wait_for_log(qr/pgss_ng restored/, $pos);

is(quiet_psql(sprintf($of, 'count(*)', 'pgss_ng', 'ra')), '0',
	'partial reset: none of ra\'s entries is restored after its reset');
is(quiet_psql(sprintf($of, 'count(*)', 'pgss_ng_evicted', 'ra')), '0',
	'partial reset: nor are its rows of the evicted remainder');
is( quiet_psql(
		sprintf($of, "string_agg(queryid || ' ' || calls, ',' ORDER BY queryid)", 'pgss_ng', 'rb')),
	$rb_entries, 'partial reset: every entry of rb is restored, with its calls');
is( quiet_psql(
		sprintf($of, "string_agg(toplevel || ' ' || entries || ' ' || calls, ',')",
			'pgss_ng_evicted', 'rb')),
	$rb_rows, 'partial reset: and its row of the evicted remainder');
like(slurp_file($node->logfile, $pos),
	qr/pgss_ng restored $entries{rb} statement entries from "pg_stat\/pgss_ng\.stat"\n[^\n]*DETAIL:  A reset made since the server started removed the statements of $entries{ra} more saved entries: they were not restored\./,
	'partial reset: the log line counts the entries it kept out');

$node->stop;
done_testing();

END { gdb_quit() if $g && $g->{h}; }
