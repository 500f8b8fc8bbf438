# t/PgssNgGdb.pm
#	Driving a backend with gdb, and psql sessions without waiting, for the
#	TAP tests that force an interleaving: stop a backend at a breakpoint
#	(so it holds a lock, or sits inside a call), let other sessions run
#	into it, let it go.  gdb runs as the test's user (the server's), fed
#	through its standard input; the backend's own signals pass through.
#
#	gdb_skip_unless_usable($pid, @symbols)
#		plan skip_all (saying why) unless gdb is installed and can attach
#		to backend $pid; then one test per symbol that gdb finds it.
#	$g = gdb_attach($pid, @breakpoints)
#		attach, set the breakpoints (gdb "break" arguments), continue;
#		undef (with a failed test) if that did not work or the
#		pgss_ng.so on disk is not the one the backend loaded.
#	($g, $mark) = gdb_stop_at($name, $pid, $break, $func, $session, $sql)
#		gdb_attach($pid, $break), send $sql to $session (bg_send) and
#		wait (one test, named after $name) until the backend stops in
#		$func; $g is undef, gdb let go, if any of it failed
#	gdb_cmd($g, @commands)			send commands, do not wait
#	gdb_wait($g, $re)				gdb's output up to $re, or undef
#	gdb_stopped_in($g, $func)		wait for a stop at a breakpoint in $func
#	gdb_bt($g)						the stopped backend's backtrace
#	gdb_release($g)					delete the breakpoints, detach, quit
#	$mark = bg_send($session, $sql)	send to a background_psql session
#	bg_wait($session, $mark)		its output, or undef on timeout
#	bg_wait_or_event($obs, $session, $mark, $pid, $event)
#		'answered' once the session answered, or 'waits' once backend
#		$pid shows wait event $event in pg_stat_activity (read through
#		$obs), whichever comes first; undef on timeout
#	wait_for_wait_event($obs, $pid, $event)
#		poll pg_stat_activity until $pid waits on LWLock $event; returns
#		what it showed last ("LWLock:<name>" when it did)
#
#	Every wait is bounded by the suite's timeout
#	($PostgreSQL::Test::Utils::timeout_default) and returns instead of
#	dying, so that a failed wait still lets the stopped backend go.
package PgssNgGdb;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(gdb_skip_unless_usable gdb_attach gdb_stop_at gdb_cmd gdb_wait
  gdb_stopped_in gdb_bt gdb_release bg_send bg_wait bg_wait_or_event
  wait_for_wait_event);

sub gdb_skip_unless_usable
{
	my ($pid, @symbols) = @_;
	my ($out, $err) = ('', '');
	plan skip_all => 'gdb is not installed'
	  unless eval { IPC::Run::run([ 'gdb', '--version' ], '>', \$out, '2>', \$err) };
	($out, $err) = ('', '');
	IPC::Run::run(
		[
			'gdb', '-q', '-nx', '-batch', '-p', $pid,
			'-ex', 'set debuginfod enabled off',
			'-ex', 'info inferiors',
			map { ('-ex', "info address $_") } @symbols
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	if ($out !~ /process $pid\b/)
	{
		my ($why) = grep { /\S/ } split /\n/, $err;
		plan skip_all => 'gdb cannot attach to a backend: '
		  . ($why // 'no output');
	}
	like($out, qr/Symbol "\Q$_\E" is/, "gdb finds $_")
	  or diag("gdb output:\n$out\n$err")
	  for @symbols;
	return;
}

# pgss_ng.so replaced on disk since the backend loaded it (gdb would read
# the wrong symbols)?
sub library_replaced
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/maps") or return 0;
	my $replaced = grep { m{/pgss_ng\.so \(deleted\)$} } <$fh>;
	close($fh);
	return $replaced;
}

sub gdb_attach
{
	my ($pid, @breaks) = @_;
	return undef
	  unless ok(!library_replaced($pid),
		"pgss_ng.so on disk is the one backend $pid loaded");
	my $g = { in => '', out => '', err => '', stopped => 0 };
	$g->{timer} = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	$g->{h} = IPC::Run::start([ 'gdb', '-q', '-nx', '-p', $pid ],
		'<', \$g->{in}, '>', \$g->{out}, '2>', \$g->{err}, $g->{timer});
	# The backend's signals (reload, latch wake-ups, SIGTERM of a
	# shutdown) reach it without stopping it.  SIGINT keeps gdb's
	# default: gdb_release() uses it to stop a running backend.
	gdb_cmd($g, 'set pagination off', 'set confirm off', 'set width 0',
		'set debuginfod enabled off',
		'handle SIGHUP SIGUSR1 SIGUSR2 SIGURG SIGALRM SIGPIPE SIGTERM nostop noprint pass',
		(map { "break $_" } @breaks), 'continue');
	return $g if ok(defined gdb_wait($g, qr/Continuing\./), "gdb attached to $pid");
	gdb_release($g);
	return undef;
}

sub gdb_stop_at
{
	my ($name, $pid, $break, $func, $s, $sql) = @_;
	my $g = gdb_attach($pid, $break) or return (undef, undef);
	my $mark = bg_send($s, $sql);
	return ($g, $mark) if ok(gdb_stopped_in($g, $func), "$name: stopped in $func");
	gdb_release($g);
	return (undef, $mark);
}

sub gdb_cmd
{
	my ($g, @cmds) = @_;
	$g->{stopped} = 0 if grep { /^(?:continue|finish)$/ } @cmds;
	$g->{in} .= join('', map { "$_\n" } @cmds);
	$g->{h}->pump_nb;
	return;
}

sub gdb_wait
{
	my ($g, $re) = @_;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	my $ok = eval { pump_until($g->{h}, $g->{timer}, \$g->{out}, $re) };
	my $out = $g->{out};
	$g->{out} = '';
	diag("gdb output:\n$out\ngdb stderr:\n$g->{err}") unless $ok;
	return $ok ? $out : undef;
}

# "Breakpoint N, func (", "Breakpoint N.M, 0x... in func ()" ...
sub gdb_stopped_in
{
	my ($g, $func) = @_;
	$g->{stopped} = defined gdb_wait($g,
		qr/(?:Temporary b|B)reakpoint \d+(?:\.\d+)?, (?:0x[0-9a-f]+ in )?\Q$func\E \(/
	);
	return $g->{stopped};
}

sub gdb_bt
{
	my ($g) = @_;
	gdb_cmd($g, 'bt', 'echo @@bt done@@\n');
	return gdb_wait($g, qr/\@\@bt done\@\@/) // '';
}

sub gdb_release
{
	my ($g) = @_;
	return if !defined $g || $g->{released}++;
	$g->{h}->signal('INT') if !$g->{stopped} && $g->{h}->pumpable;
	gdb_cmd($g, 'delete', 'detach', 'quit') if $g->{h}->pumpable;
	$g->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	$g->{h}->pump while $g->{h}->pumpable && !$g->{timer}->is_expired;
	$g->{h}->kill_kill if $g->{h}->pumpable;
	$g->{h}->finish;
	return;
}

my $nmark = 0;

sub bg_send
{
	my ($s, $sql) = @_;
	my $mark = '@@done ' . ++$nmark . '@@';
	$s->{stdin} .= "$sql\n\\echo '$mark'\n";
	$s->{run}->pump_nb;
	return $mark;
}

# The output before $mark, if the session printed it (consumed).
sub bg_answer
{
	my ($s, $mark) = @_;
	return undef unless $s->{stdout} =~ /\Q$mark\E\n/;
	my $out = $s->{stdout};
	$s->{stdout} = '';
	$out =~ s/\Q$mark\E\n//;
	chomp $out;
	return $out;
}

sub bg_wait
{
	my ($s, $mark) = @_;
	$s->{timeout}->start;
	eval { pump_until($s->{run}, $s->{timeout}, \$s->{stdout}, qr/\Q$mark\E\n/) };
	return bg_answer($s, $mark);
}

sub current_wait_event
{
	my ($obs, $pid) = @_;
	return $obs->query_safe(
		"SELECT coalesce(wait_event_type || ':' || wait_event, '')
		 FROM pg_stat_activity WHERE pid = $pid");
}

sub bg_wait_or_event
{
	my ($obs, $s, $mark, $pid, $event) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		$s->{run}->pump_nb;
		return 'answered' if defined bg_answer($s, $mark);
		return 'waits' if current_wait_event($obs, $pid) eq "LWLock:$event";
		usleep(20_000);
	}
	return undef;
}

sub wait_for_wait_event
{
	my ($obs, $pid, $event) = @_;
	my $seen = '';
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		$seen = current_wait_event($obs, $pid);
		last if $seen eq "LWLock:$event";
		usleep(50_000);
	}
	return $seen;
}

1;
