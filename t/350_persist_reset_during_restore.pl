# A full reset while the writer restores the stats file wins: nothing
# restored before it survives it, nothing saved is restored after it, and
# stats_reset stays the reset's time (the saved, older one never comes
# back).
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
# stopped meanwhile), the test resets everything, and lets the writer go.
# No step waits for a time.
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
# with gdb_send and gdb_wait).  Its waits are bounded by a timer, and
# return false rather than die, so that a failed wait still lets the
# processes go.
my $g = { in => '', out => '', err => '' };
$g->{timer} = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
$g->{h} = IPC::Run::start(
	[ 'gdb', '-q', '-nx', '-iex', 'set non-stop on', '-p', $pmpid ],
	'<', \$g->{in}, '>', \$g->{out}, '2>', \$g->{err}, $g->{timer});

# Remove the breakpoint and quit gdb, which detaches every process it still
# holds, stopped or not (gdb_release detaches one inferior only).
sub gdb_quit
{
	return if $g->{quit}++;
	gdb_send($g, 'delete', 'quit') if $g->{h}->pumpable;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	$g->{h}->pump while $g->{h}->pumpable && !$g->{timer}->is_expired;
	$g->{h}->kill_kill if $g->{h}->pumpable;
	$g->{h}->finish;
	return;
}

gdb_send($g,
	'set pagination off',
	'set confirm off',
	'set width 0',
	'set debuginfod enabled off',
	# every process's signals pass, none stops it
	'handle SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGURG SIGALRM SIGPIPE SIGCHLD nostop noprint pass',
	'set detach-on-fork off',
	'set follow-fork-mode parent',
	'break pgss_ng_stmt_restore_record',
	'ignore 1 2',
	'continue -a &',
	'echo @@attached@@\n');
ok(defined gdb_wait($g, qr/\@\@attached\@\@/), 'gdb follows the postmaster');

# The saved file back in place, then a crash: the new writer restores it.
ok(copy($saved, $statfile), 'the saved stats file is back in pg_stat/');
my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $vpid = $victim->query_safe('SELECT pg_backend_pid()');
$pos = -s $node->logfile;
ok(kill('KILL', $vpid), "SIGKILL to backend $vpid");

my $stop = gdb_wait($g,
	qr/Thread (\d+)\.\d+ [^\n]* hit Breakpoint 1(?:\.\d+)?, (?:0x[0-9a-f]+ in )?pgss_ng_stmt_restore_record \(/
);
my ($writer_inf) = ($stop // '') =~ /Thread (\d+)\.\d+ [^\n]* hit Breakpoint/;
ok(defined $writer_inf, 'the new writer stopped at its third record');
# Let every other process go: the postmaster first (no more forks seen).
gdb_send($g, 'info inferiors', 'echo @@listed@@\n');
my $list = gdb_wait($g, qr/\@\@listed\@\@/) // '';
my @others = grep { $_ != ($writer_inf // 0) }
  $list =~ /^\*?\s+(\d+)\s+process \d+/mg;
gdb_send($g, 'detach inferiors ' . join(' ', sort { $a <=> $b } @others),
	'echo @@detached@@\n');
ok(defined gdb_wait($g, qr/\@\@detached\@\@/), 'the other processes are let go');
eval { $victim->quit; };

{
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	ok($node->poll_query_until('postgres', 'SELECT true'),
		'the server accepts connections again');
}
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

$node->stop;
done_testing();

END { gdb_quit() if $g && $g->{h}; }
