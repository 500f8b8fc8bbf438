# t/lib/PgssNgTest.pm
#	Helpers shared by pgss_ng's TAP tests (found through "-I t/lib", see the
#	Makefile's check-tap target).
package PgssNgTest;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(usleep);

our @EXPORT =
  qw(pgss_node create_wide_table wait_for_clients_gone start_small_arena_node
  setup_alice_bob crc32c write_file $ALL_ROWS
  gdb_installed gdb_probe gdb_start gdb_send gdb_wait gdb_stop_re
  stopped_in stopped_or_answered gdb_bt gdb_release library_replaced
  gdb_usable_or_skip gdb_attach gdb_stop_at stop_next
  send_async wait_async answered_or_lwlock wait_for_lwlock
  stop_and_check_log untracked_psql waits_added);

# $ALL_ROWS
#	Every column of every entry (pgss_ng_detail), in key order, for tests
#	that compare rows whole.
our $ALL_ROWS =
  'SELECT * FROM pgss_ng_detail ORDER BY userid, dbid, queryid, toplevel';

# pgss_node($name, %gucs)
#	Create, initdb and start a node whose postgresql.conf preloads pgss_ng
#	and then has the given settings, one line each, in the order given
#	(pgss_node('x', 'pgss_ng.max' => 100, 'pgss_ng.track' => 'top')).
#	shared_preload_libraries is 'pgss_ng' unless it is one of them.  Two
#	keys are not settings: _init, a hash ref passed to init(), and _start,
#	false to return the node initialized but not started.  Values other
#	than integers are written single-quoted.
sub pgss_node
{
	my ($name, @args) = @_;
	die "pgss_node: odd number of settings" if @args % 2;
	my (%opt, @gucs);
	while (my ($k, $v) = splice(@args, 0, 2))
	{
		if ($k =~ /^_/) { $opt{$k} = $v; next; }
		push @gucs, [ $k, $v ];
	}
	unshift @gucs, [ 'shared_preload_libraries', 'pgss_ng' ]
	  unless grep { $_->[0] eq 'shared_preload_libraries' } @gucs;

	my $conf = '';
	for my $g (@gucs)
	{
		my ($k, $v) = @$g;
		$v = "'" . ($v =~ s/'/''/gr) . "'" unless $v =~ /^-?\d+$/;
		$conf .= "$k = $v\n";
	}
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{_init} // {} });
	$node->append_conf('postgresql.conf', $conf);
	$node->start if $opt{_start} // 1;
	return $node;
}

# untracked_psql($node, $sql)
#	safe_psql in database postgres with pgss_ng.track = none: the test's
#	own set-up and reads leave no entries and change none.
sub untracked_psql
{
	my ($node, $sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql);
}

# waits_added($node)
#	Wait until the wait sampler has added to the entries every sample it
#	took before this call (pgss_ng_info.wait_samples_added after its
#	start); dies at the suite's timeout.  Untracked.
sub waits_added
{
	my ($node) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->poll_query_until('postgres',
		"SELECT wait_samples_added > '$t' FROM pgss_ng_info")
	  or die "the wait sampler added nothing after $t";
	return;
}

# create_wide_table($node, $table, $ncols)
#	An empty table $table with integer columns c1 .. c$ncols: statements
#	selecting different columns of it have different queryids, which is how
#	the tests make many distinct statement shapes (constants would be
#	normalized away).
sub create_wide_table
{
	my ($node, $table, $ncols) = @_;
	$node->safe_psql(
		'postgres', qq{
SELECT format('CREATE TABLE $table (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, $ncols) i \\gexec
});
	return;
}

# wait_for_clients_gone($node, $what)
#	Pass once no client backend but the polling one is left: a backend
#	leaves pg_stat_activity after its exit flush, so everything it counted
#	is then in the shared entries.  The poll runs with the caller's
#	environment (PGOPTIONS decides whether it is itself tracked).
sub wait_for_clients_gone
{
	my ($node, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			q{SELECT count(*) FROM pg_stat_activity
			  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()},
			'0'),
		$what);
	return;
}

# start_small_arena_node($name, %gucs)
#	pgss_node() with the smallest text arena (256 kB), top-level tracking
#	with utility statements, no planning and no stats file; %gucs (and
#	_init) are added after those settings.
sub start_small_arena_node
{
	my ($name, @gucs) = @_;
	return pgss_node(
		$name,
		'pgss_ng.max' => 5000,
		'pgss_ng.query_text_memory' => '256kB',
		'pgss_ng.track' => 'top',
		'pgss_ng.track_utility' => 'on',
		'pgss_ng.track_planning' => 'off',
		'pgss_ng.save' => 'off',
		@gucs);
}

# setup_alice_bob($node, $ncols)
#	CREATE EXTENSION pgss_ng, login roles alice and bob (who may SET
#	pgss_ng.track) and a wide table w of $ncols columns they may read.
sub setup_alice_bob
{
	my ($node, $ncols) = @_;
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT SET ON PARAMETER pgss_ng.track TO alice, bob;
});
	create_wide_table($node, 'w', $ncols);
	$node->safe_psql('postgres', 'GRANT SELECT ON w TO alice, bob');
	return;
}

# stop_and_check_log($node)
#	Check that the server still answers, stop it, and check that its log
#	has no ERROR, FATAL, PANIC, failed assertion or crash.
sub stop_and_check_log
{
	my ($node) = @_;
	is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still answers');
	$node->stop;
	my @errors = grep { /\b(ERROR|FATAL|PANIC|TRAP):|terminated by signal/ }
	  split /\n/, PostgreSQL::Test::Utils::slurp_file($node->logfile);
	is_deeply(\@errors, [], 'no ERROR, FATAL or crash in the server log');
	return;
}

# crc32c($data)
#	CRC-32C (Castagnoli, reflected), as PostgreSQL's pg_crc32c computes
#	it: what the stats file's trailer holds, for tests that forge files.
my @crc_table;
for my $i (0 .. 255)
{
	my $c = $i;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$crc_table[$i] = $c;
}

sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8)
	  for unpack('C*', $data);
	return $crc ^ 0xFFFFFFFF;
}

# write_file($path, $data)
#	Write $data as raw bytes to $path, mode 0600 (as the server's files).
sub write_file
{
	my ($path, $data) = @_;
	open my $fh, '>:raw', $path or die "could not write $path: $!";
	print $fh $data;
	close $fh;
	chmod 0600, $path;
	return;
}


# --- gdb driving a backend, for the tests that stop one at a chosen point ---
#
# gdb reads commands on its standard input; the tests wait for what it
# prints (a breakpoint hit, a marker echoed after a command), never for a
# time.  The whole file should skip when gdb_installed() is false or
# gdb_probe() cannot attach.

# gdb_installed()
#	Is gdb on the PATH?
sub gdb_installed
{
	my ($out, $err) = ('', '');
	return eval {
		IPC::Run::run([ 'gdb', '--version' ], '>', \$out, '2>', \$err);
	};
}

# gdb_probe($pid, @symbols)
#	Attach gdb to backend $pid once and ask it for @symbols (functions
#	the test will stop in).  Returns (attached, gdb's output, the first
#	line of its errors): a ptrace that is not permitted gives attached
#	false.  The caller checks each "Symbol "NAME" is" in the output.
sub gdb_probe
{
	my ($pid, @symbols) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			'gdb', '-q', '-nx', '-batch', '-p', $pid,
			'-ex', 'set debuginfod enabled off',
			'-ex', 'info inferiors',
			map { ('-ex', "info address $_") } @symbols
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	my ($why) = grep { /\S/ } split /\n/, $err;
	return ($out =~ /process $pid\b/ ? 1 : 0, $out, $why // 'no output');
}

# gdb_start($pid [, non_stop => 1])
#	Attach gdb to backend $pid; returns the handle the other gdb_*
#	functions take.  A timer, not a timeout: waiting past it returns false
#	instead of dying, so that a failed wait still lets the backend go.
#	With non_stop (for the postmaster and the processes it forks: one
#	thread stops, the others run), every signal passes without stopping.
sub gdb_start
{
	my ($pid, %opt) = @_;
	my $g = { in => '', out => '', err => '' };
	$g->{timer} = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	$g->{h} = IPC::Run::start(
		[
			'gdb', '-q', '-nx',
			($opt{non_stop} ? ('-iex', 'set non-stop on') : ()),
			'-p', $pid
		],
		'<', \$g->{in}, '>', \$g->{out}, '2>', \$g->{err}, $g->{timer});
	# The backend's own signals (reload, latch wake-ups, a shutdown's
	# SIGTERM) must reach it without stopping it.  Without non_stop,
	# SIGINT keeps gdb's default (stop, not passed): gdb_release() uses it
	# to interrupt a running backend.
	gdb_send($g,
		'set pagination off',
		'set confirm off',
		'set width 0',
		'set debuginfod enabled off',
		$opt{non_stop}
		? 'handle SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGURG SIGALRM SIGPIPE SIGCHLD nostop noprint pass'
		: 'handle SIGHUP SIGUSR1 SIGUSR2 SIGURG SIGALRM SIGPIPE SIGTERM nostop noprint pass'
	);
	return $g;
}

# gdb_send($g, @commands)
#	Send commands to gdb without waiting ("continue" and "finish" let the
#	backend run).
sub gdb_send
{
	my ($g, @cmds) = @_;
	$g->{stopped} = 0 if grep { /^(?:continue|finish)$/ } @cmds;
	$g->{in} .= join('', map { "$_\n" } @cmds);
	$g->{h}->pump_nb;
	return;
}

# gdb_wait($g, $re)
#	Wait until gdb's output matches $re; return (and consume) it, or undef
#	(with gdb's output as a diagnostic).
sub gdb_wait
{
	my ($g, $re) = @_;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	my $ok = pump_until($g->{h}, $g->{timer}, \$g->{out}, $re);
	my $out = $g->{out};
	$g->{out} = '';
	diag("gdb output:\n$out\ngdb stderr:\n$g->{err}") unless $ok;
	return $ok ? $out : undef;
}

# gdb_stop_re($func)
#	What gdb prints when a breakpoint stops the backend in $func:
#	"Breakpoint N, func (" or, when gdb set it at several places, "N.M";
#	"0x... in func (" for a breakpoint on an address inside it.
sub gdb_stop_re
{
	my ($func) = @_;
	return
	  qr/(?:Temporary b|B)reakpoint \d+(?:\.\d+)?, (?:0x[0-9a-f]+ in )?\Q$func\E \(/;
}

# stopped_in($g, $func)
#	Wait until gdb stops the backend in $func; true if it did.
sub stopped_in
{
	my ($g, $func) = @_;
	$g->{stopped} = defined gdb_wait($g, gdb_stop_re($func));
	return $g->{stopped};
}

# stopped_or_answered($g, $func, $s, $mark)
#	Wait until gdb stops the backend in $func (return 'stopped') or session
#	$s answers what send_async() sent with marker $mark (return its
#	output), whichever comes first; undef on timeout.
sub stopped_or_answered
{
	my ($g, $func, $s, $mark) = @_;
	my $stop_re = gdb_stop_re($func);
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	$s->{timeout}->start;
	while (time() < $deadline)
	{
		$g->{h}->pump_nb if $g->{h}->pumpable;
		$s->{run}->pump_nb;
		if ($g->{out} =~ $stop_re)
		{
			$g->{out} = '';
			$g->{stopped} = 1;
			return 'stopped';
		}
		my $out = take_answer($s, $mark);
		return $out if defined $out;
		usleep(10_000);
	}
	diag("gdb output:\n$g->{out}\ngdb stderr:\n$g->{err}");
	return undef;
}

# gdb_bt($g)
#	The backtrace of the stopped backend.
sub gdb_bt
{
	my ($g) = @_;
	gdb_send($g, 'bt', 'echo @@bt done@@\n');
	return gdb_wait($g, qr/\@\@bt done\@\@/) // '';
}

# gdb_release($g)
#	Remove the breakpoints, let the backend go, quit ($g may be undef:
#	nothing to do).  Works whether the
#	backend is stopped at a breakpoint or running (after a failed wait:
#	gdb is interrupted first, which stops it).
sub gdb_release
{
	my ($g) = @_;
	return if !defined $g || $g->{released}++;
	$g->{h}->signal('INT') if !$g->{stopped} && $g->{h}->pumpable;
	gdb_send($g, 'delete', 'detach', 'quit') if $g->{h}->pumpable;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	$g->{h}->pump while $g->{h}->pumpable && !$g->{timer}->is_expired;
	$g->{h}->kill_kill if $g->{h}->pumpable;
	$g->{h}->finish;
	return;
}

# library_replaced($pid)
#	gdb reads the symbols of the pgss_ng.so on disk: true if it was
#	reinstalled since backend $pid loaded it (the addresses would be
#	wrong).
sub library_replaced
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/maps") or return 0;
	my $replaced = grep { m{/pgss_ng\.so \(deleted\)$} } <$fh>;
	close($fh);
	return $replaced;
}

# gdb_usable_or_skip($pid, @symbols)
#	Skip the whole file (plan skip_all, saying why) unless gdb is
#	installed and can attach to backend $pid; then one test per symbol
#	(a function a breakpoint goes on) that gdb must find.
sub gdb_usable_or_skip
{
	my ($pid, @symbols) = @_;
	plan skip_all => 'gdb is not installed' unless gdb_installed();
	my ($attached, $out, $why) = gdb_probe($pid, @symbols);
	plan skip_all => "gdb cannot attach to a backend: $why" unless $attached;
	like($out, qr/Symbol "\Q$_\E" is/, "gdb finds $_")
	  or diag("gdb output:\n$out")
	  for @symbols;
	return;
}

# gdb_attach($name, $pid, @breaks)
#	Attach gdb to backend $pid, set a breakpoint at each of @breaks (gdb
#	"break" arguments) and let it run; returns the handle, or undef (with
#	a failed test named after scenario $name) if the pgss_ng.so on disk
#	is not the one the backend loaded or gdb did not attach.
sub gdb_attach
{
	my ($name, $pid, @breaks) = @_;
	return undef
	  unless ok(!library_replaced($pid),
		"$name: pgss_ng.so on disk is the one backend $pid loaded");
	my $g = gdb_start($pid);
	gdb_send($g, (map { "break $_" } @breaks), 'continue');
	return $g
	  if ok(defined gdb_wait($g, qr/Continuing\./),
		"$name: gdb attached to backend $pid");
	gdb_release($g);
	return undef;
}

# gdb_stop_at($name, $pid, $break, $func, $s, $sql)
#	gdb_attach() with a breakpoint at $break, send $sql to session $s
#	(send_async) and wait until backend $pid stops in $func (one test).
#	Returns (the handle, or undef with gdb let go if any of it failed;
#	the marker of $sql, undef if it was not sent).
sub gdb_stop_at
{
	my ($name, $pid, $break, $func, $s, $sql) = @_;
	my $g = gdb_attach($name, $pid, $break) or return (undef, undef);
	my $mark = send_async($s, $sql);
	return ($g, $mark) if ok(stopped_in($g, $func), "$name: stopped in $func");
	gdb_release($g);
	return (undef, $mark);
}

# stop_next($g, $name, $break, $func, $bt_re, $what)
#	From a stop of backend A: delete the breakpoints, set a temporary one
#	at $break, let A run and wait until it stops in $func (one test);
#	then its backtrace must match $bt_re (one test, "$name: $what").
#	True if A stopped there.
sub stop_next
{
	my ($g, $name, $break, $func, $bt_re, $what) = @_;
	gdb_send($g, 'delete', "tbreak $break", 'continue');
	return 0 unless ok(stopped_in($g, $func), "$name: A stopped in $func");
	like(gdb_bt($g), $bt_re, "$name: $what");
	return 1;
}

# --- background_psql sessions: send without waiting, wait later ---

my $nmark = 0;

# send_async($s, $sql)
#	Send $sql to session $s (a background_psql) followed by an echoed
#	marker; returns the marker, for wait_async().
sub send_async
{
	my ($s, $sql) = @_;
	my $mark = '@@done ' . ++$nmark . '@@';
	$s->{stdin} .= "$sql\n\\echo '$mark'\n";
	$s->{run}->pump_nb;
	return $mark;
}

# take_answer($s, $mark)
#	If session $s has answered what send_async() sent with marker $mark,
#	its output (consumed); else undef.
sub take_answer
{
	my ($s, $mark) = @_;
	return undef unless $s->{stdout} =~ /\Q$mark\E\n/;
	my $out = $s->{stdout};
	$s->{stdout} = '';
	$out =~ s/\Q$mark\E\n//;
	chomp $out;
	return $out;
}

# wait_async($s, $mark)
#	The output of what send_async() sent, or undef on timeout.
sub wait_async
{
	my ($s, $mark) = @_;
	$s->{timeout}->start;
	eval {
		pump_until($s->{run}, $s->{timeout}, \$s->{stdout}, qr/\Q$mark\E\n/);
	};
	return take_answer($s, $mark);
}

# lwlock_of($obs, $pid)
#	What backend $pid waits on now, "type:event" ('' if nothing), read
#	through the (untracked) session $obs.
sub lwlock_of
{
	my ($obs, $pid) = @_;
	return $obs->query_safe(
		"SELECT coalesce(wait_event_type || ':' || wait_event, '')
		 FROM pg_stat_activity WHERE pid = $pid");
}

# wait_for_lwlock($obs, $pid, $name)
#	Poll until backend $pid waits on LWLock $name (at most the suite's
#	timeout); return what it showed last.
sub wait_for_lwlock
{
	my ($obs, $pid, $name) = @_;
	my $seen = '';
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		$seen = lwlock_of($obs, $pid);
		last if $seen eq "LWLock:$name";
		usleep(50_000);
	}
	return $seen;
}

# answered_or_lwlock($obs, $s, $mark, $pid, $name)
#	'answered' once session $s answered what send_async() sent with
#	marker $mark (its output consumed), or 'waits' once its backend $pid
#	waits on LWLock $name, whichever comes first; undef on timeout.
sub answered_or_lwlock
{
	my ($obs, $s, $mark, $pid, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		$s->{run}->pump_nb;
		return 'answered' if defined take_answer($s, $mark);
		return 'waits' if lwlock_of($obs, $pid) eq "LWLock:$name";
		usleep(20_000);
	}
	return undef;
}

1;
