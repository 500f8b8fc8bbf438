#!/usr/bin/perl
# pgss_bench_run.pl: the benchmark's measurements.  Makes a throwaway
# cluster, runs every workload for every variant (untracked,
# pg_stat_statements, pgss_ng), round by round, and writes the raw results
# to --json-out.  bench/pgss_bench_report.pl turns them into the results
# files.
#
# Normally started by bench/run.sh, which runs it as "postgres" when
# started as root: initdb refuses to run as root, and this script never
# switches users itself.  See docs/performance.md.
#
# One run of one workload for one variant at one client count is a cell
# (run_cell).  What a cell does is given by its workload's entry in
# %WORKLOAD; what is measured around it, besides pgbench's TPS and what the
# variant recorded, by @PROBES.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Getopt::Long qw(GetOptionsFromArray);
use JSON::PP;
use POSIX qw(strftime WNOHANG);
use Time::HiRes qw(time sleep);
use File::Temp qw(tempdir);
use File::Path qw(remove_tree make_path);
use File::Basename qw(basename);

use PgssBench qw(@WORKLOADS @VARIANTS %VNAME %MODES mode_usage parse_mode
  slurp spew median percentile);

$| = 1;

my $PGBIN = $ENV{PGSS_BENCH_PGBIN} // '/usr/lib/postgresql/15/bin';
if (!-x "$PGBIN/initdb")
{
	# not Debian's layout: the pg_config in PATH
	my $b = `pg_config --bindir 2>/dev/null` // '';
	chomp $b;
	$PGBIN = $b if $b && -x "$b/initdb";
}

# Statement shapes on table w (100 int columns, one row).  Hot shapes are
# two-column selects "SELECT cA, cB FROM w" numbered h = 0.. with
# A = 1 + h % 100, B = 1 + h / 100; cold shapes are four-column selects with
# random columns (100^4 = 10^8 shapes).  Two- and four-column shapes never
# share a query id.  Hot sets of more than 10,000 shapes (--sizes) go on to
# tables w1, w2, ... of the same columns: shape h >= 10,000 is
# "SELECT cA, cB FROM wT" with B = 1 + (h / 100) % 100, T = h / 10,000.
my $HOT_CHURN   = 4000;     # hot shapes of hotcold_churn and view_read
my $HOT_TRICKLE = 4950;     # hot shapes of trickle
my $TRICKLE_W   = 499_999;  # trickle: one cold script per 500,000
my $PREFILL     = 1100;     # view_read: distinct cold shapes run before it
# view_read_incremental (pgss_ng only): the table holds $INC_ENTRIES hot
# shapes; one client keeps running the first $INC_CHANGED of them, and a
# reader alternates a full read with a read of what changed in the last
# second (pgss_ng(true, now() - 1 s)): 5% of the entries.
my $INC_ENTRIES = 4950;
my $INC_CHANGED = 250;
my $MAX_ENTRIES = 5000;     # max of both extensions (but at --sizes' points)
# hotcold_churn's hot set is this share of max (4,000 at max 5,000)
my $HOT_CHURN_SHARE = 0.8;
# cold_long: a cold statement with a comment of this many bytes (its text
# is about 2 kB); text pressure: pgss_ng.query_text_memory at --sizes'
# pressure point (its "no pressure" twin gets room for every text)
my $LONG_TEXT_BYTES = 2000;
my $PRESSURE_MEMORY = '2MB';

# Normalized texts of pgbench's built-in scripts: their "hot set".
my %BUILTIN_TEXTS = (
	select_only => ['SELECT abalance FROM pgbench_accounts WHERE aid = $1'],
	tpcb => [
		'BEGIN',
		'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2',
		'SELECT abalance FROM pgbench_accounts WHERE aid = $1',
		'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2',
		'UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2',
		'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)',
		'END',
	],
);

# What each workload runs.  Keys:
#   tables     pgbench (pgbench -i) or w (the 100-column table)
#   builtin    pgbench's built-in script, with these options, or
#   scripts    custom scripts in the work directory (with @weight), run
#              with -n -M simple
#   warm       scripts run once by psql before pgbench (in this order)
#   warm_calls how many hot-set calls the warm-up makes
#   hot_texts  the hot set, by normalized text, or
#   hot_shapes the hot set: the first N hot shapes (by query id)
#   reader     a second pgbench of one client (bench_reader) alternating
#              these scripts (%s: the variant), logged as these names
#   during     called half-way through the run (returns keys of the result)
#   variants   the variants it runs for (default all)
#   clients    its client counts (default --clients)
#   hot_share  the hot set is this share of max, at --sizes' points (the
#              entry's hot set is that of max 5,000)
#   fill       at --sizes' points, this script runs before the measured run
#              until the table is full, so that every run evicts from the
#              start (as in a server in steady state)
#   long       its statements carry a comment of $LONG_TEXT_BYTES bytes
my %WORKLOAD = (
	select_only => {
		tables    => 'pgbench',
		builtin   => [ '-S', '-M', 'prepared' ],
		hot_texts => $BUILTIN_TEXTS{select_only},
	},
	tpcb => {
		tables    => 'pgbench',
		builtin   => [],    # the TPC-B-like script, simple protocol
		hot_texts => $BUILTIN_TEXTS{tpcb},
	},
	hotcold_churn => {
		tables     => 'w',
		scripts    => [ "hot$HOT_CHURN.sql\@9", 'cold.sql@1' ],
		warm       => ["warm$HOT_CHURN.sql"],
		warm_calls => $HOT_CHURN,
		hot_shapes => $HOT_CHURN,
		hot_share  => $HOT_CHURN_SHARE,
		fill       => 'cold.sql',
	},
	cold_only => {
		tables  => 'w',
		scripts => ['cold.sql'],
		fill    => 'cold.sql',
	},
	cold_long => {
		tables  => 'w',
		scripts => ['cold_long.sql'],
		fill    => 'cold_long.sql',
		long    => 1,
	},
	trickle => {
		tables     => 'w',
		scripts    => [ "hot$HOT_TRICKLE.sql\@$TRICKLE_W", 'cold.sql@1' ],
		warm       => ["warm$HOT_TRICKLE.sql"],
		warm_calls => $HOT_TRICKLE,
		hot_shapes => $HOT_TRICKLE,
	},
	view_read => {
		tables     => 'w',
		scripts    => [ "hot$HOT_CHURN.sql\@9", 'cold.sql@1' ],
		warm       => [ "warm$HOT_CHURN.sql", 'prefill.sql' ],
		warm_calls => $HOT_CHURN,
		hot_shapes => $HOT_CHURN,
		reader     => {
			scripts => [ 'view_%s.sql', 'fn_%s.sql' ],
			names   => [qw(view fn)]
		},
		variants => [qw(pgss pgss_ng)],
		clients  => [4],
	},
	view_read_incremental => {
		tables     => 'w',
		scripts    => ["hot$INC_CHANGED.sql"],
		warm       => ["warm$INC_ENTRIES.sql"],
		warm_calls => $INC_ENTRIES,
		reader     => {
			scripts => [ 'inc_full.sql', 'inc_since.sql' ],
			names   => [qw(full incremental)]
		},
		during   => \&incremental_rows,
		variants => ['pgss_ng'],    # pg_stat_statements has no incremental read
		clients  => [1],
	},
);

# Measurements taken in every cell besides pgbench's own and what the
# variant recorded: start($cell) runs after the warm-up, just before
# pgbench starts; finish($cell, $state) after pgbench and the reader have
# exited, before the cell waits for their backends, and returns keys of the
# cell's result; pgbench_args($cell), if given, adds options to the
# measured pgbench.  $cell: {dir, variant, workload, clients}.  A probe
# that costs something runs only when its option is on (backend_cpu:
# --backend-cpu, the default of --cpu).
my @PROBES = (
	{ name => 'waits', start => \&waits_start, finish => \&waits_finish },
	{
		name         => 'backend_cpu',
		start        => \&cpu_start,
		finish       => \&cpu_finish,
		pgbench_args => \&cpu_pgbench_args
	},
);

# ---------------------------------------------------------------- options
my %opt;
my $mode = parse_mode(\@ARGV);
GetOptionsFromArray(
	\@ARGV, \%opt,
	'rounds=i', 'duration=i', 'clients=s', 'pgbench-scale=i', 'workloads=s',
	'budget=i', 'hard-limit=i', 'workdir=s', 'json-out=s', 'commit=s',
	'keep', 'ng-setting=s@', 'sizes-max=s', 'pressure-max=i', 'backend-cpu!',
	'help',
) or die "usage: pgss_bench_run.pl --help\n";
if ($opt{help})
{
	print <<'USAGE' . mode_usage() . <<'USAGE2' . "workloads: @WORKLOADS\n";
pgss_bench_run.pl [--quick|--full|--scale|--sizes|--cpu|--smoke|--mode NAME]
                  [--rounds N] [--duration SECONDS] [--clients 1,4,16,64]
                  [--pgbench-scale N] [--workloads a,b,...]
                  [--budget SECONDS] [--hard-limit SECONDS]
                  [--ng-setting NAME=VALUE ...] [--sizes-max MAX,...]
                  [--pressure-max MAX] [--[no-]backend-cpu]
                  [--keep] [--workdir DIR] --json-out FILE
bench/run.sh takes the same options and also --pg MAJOR, --out-dir DIR and
--name STEM (where the report goes: bench/pgss_bench_report.pl).
modes (rounds x seconds per run, clients; time on 2 cores):
USAGE
view_read runs with 4 clients and view_read_incremental with 1 whatever
--clients says.
--sizes-max MAX,...: run the workloads at each max (both extensions), each run
after filling the table, with an eviction probe and the shared memory used
(default of --sizes mode: 1000,5000,20000,50000).  --pressure-max MAX: also
cold_long at that max with pgss_ng.query_text_memory = 2MB and with room
for every text (--sizes mode: 5000; 0: not).  --backend-cpu: the pgbench
backends' CPU per transaction (/proc/PID/schedstat; on in --cpu mode).
USAGE2
	exit 0;
}
die "unexpected arguments: @ARGV\n" if @ARGV;
die "--json-out FILE is needed (where the raw results go)\n"
  unless $opt{'json-out'};
my $M = $MODES{$mode};
$opt{rounds}       //= $M->{rounds};
$opt{duration}     //= $M->{duration};
$opt{clients}      //= $M->{clients};
$opt{'pgbench-scale'} //= $M->{scale};
$opt{workloads}    //= $M->{workloads};
$opt{budget}       //= $M->{budget};
$opt{'hard-limit'} //= $M->{hard};
$opt{'sizes-max'}  //= $M->{sizes};
$opt{'pressure-max'} //= $M->{pressure} // 0;
$opt{'backend-cpu'}  //= $M->{backend_cpu} // 0;

die "pgss_bench_run.pl cannot run as root (initdb refuses); "
  . "use bench/run.sh, which runs it as postgres\n" if $> == 0;

my @workloads = split /,/, $opt{workloads};
for my $w (@workloads)
{
	die "unknown workload $w\n" unless $WORKLOAD{$w};
}
my @clients = split /,/, $opt{clients};
die "bad --clients\n" if !@clients || grep { !/^\d+$/ || $_ < 1 } @clients;
die "--duration must be >= 1\n" if $opt{duration} < 1;
die "--rounds must be >= 1\n"   if $opt{rounds} < 1;
die "--backend-cpu needs --duration >= 4 (a second at each end is left out)\n"
  if $opt{'backend-cpu'} && $opt{duration} < 4;
my @POINTS = settings_points();

# A clean libpq environment: everything goes to our own socket.
delete $ENV{$_} for grep { /^PG/ } keys %ENV;
my $STMT_TIMEOUT_MS = 1000 * ($opt{duration} + 120);
$ENV{PGOPTIONS} = "-c statement_timeout=$STMT_TIMEOUT_MS -c client_min_messages=warning";
$ENV{PGCONNECT_TIMEOUT} = 10;

my $T0 = time;
my $WORK;
if ($opt{workdir})
{
	$WORK = "$opt{workdir}/run";
	remove_tree($WORK);
	make_path($WORK);
}
else
{
	$WORK = tempdir('pgss_ng_bench.XXXXXX', DIR => '/tmp');
}
chmod 0700, $WORK;
my $PGDATA = "$WORK/data";
my $SOCK   = $WORK;
my $PORT   = 5432;             # unix socket only, in a private directory
my $LOG    = "$WORK/server.log";
my %CHILDREN;
my $cleaned = 0;

# Stop what this script started: children, then the server; remove the
# work directory unless --keep.
sub cleanup
{
	return if $cleaned++;
	for my $pid (keys %CHILDREN)
	{
		kill 'TERM', $pid;
	}
	my $t = time;
	while (%CHILDREN && time - $t < 5)
	{
		for my $pid (keys %CHILDREN)
		{
			delete $CHILDREN{$pid} if waitpid($pid, WNOHANG) != 0;
		}
		sleep 0.05;
	}
	kill 'KILL', $_ for keys %CHILDREN;
	if (-f "$PGDATA/postmaster.pid")
	{
		system("$PGBIN/pg_ctl -D '$PGDATA' -m immediate -w -t 60 stop >/dev/null 2>&1");
	}
	if ($opt{keep})
	{
		print STDERR "kept $WORK\n";
	}
	else
	{
		remove_tree($WORK);
	}
}

END { cleanup() if defined $WORK && !$cleaned && $$ == $main::PARENT; }
$main::PARENT = $$;
$SIG{INT}  = sub { die "interrupted (SIGINT)\n" };
$SIG{TERM} = sub { die "interrupted (SIGTERM)\n" };
$SIG{HUP}  = sub { die "interrupted (SIGHUP)\n" };
$SIG{ALRM} = sub { die "hard time limit of $opt{'hard-limit'} s exceeded\n" };
alarm($opt{'hard-limit'});

my $data;
my $ok = eval { $data = run_all(); 1 };
my $err = $@;
alarm(0);
if (!$ok)
{
	print STDERR "\npgss_bench: FAILED: $err";
	if (-f $LOG)
	{
		print STDERR "--- server log (last 40 lines)\n";
		system('tail', '-n', '40', $LOG);
	}
	cleanup();
	exit 1;
}
cleanup();

spew($opt{'json-out'}, JSON::PP->new->canonical->pretty->encode($data));
print "raw results: $opt{'json-out'}\n";
exit((grep { $_->{error} } @{ $data->{runs} }) ? 1 : 0);

# ---------------------------------------------------------------- helpers

sub elapsed { return time - $T0; }

sub say_ts
{
	printf "[%6.1fs] %s\n", elapsed(), join('', @_);
}

# Run a command, return its stdout; die on failure (stderr passes through).
sub capture
{
	my (@cmd) = @_;
	open my $fh, '-|', @cmd or die "cannot run $cmd[0]: $!\n";
	local $/;
	my $out = <$fh> // '';
	close $fh;
	die "command failed (exit " . ($? >> 8) . "): @cmd\n" if $?;
	return $out;
}

# Run a command with its output to $logf; die with the log's end on failure.
sub run_quiet
{
	my ($logf, @cmd) = @_;
	my $pid = spawn(\@cmd, $logf);
	my $st = wait_child($pid, 600);
	if ($st != 0)
	{
		my $tail = -f $logf ? slurp($logf) : '';
		$tail = substr($tail, -2000) if length $tail > 2000;
		die "command failed (status $st): @cmd\n$tail\n";
	}
}

sub psql
{
	my ($sql) = @_;
	my $out = capture("$PGBIN/psql", '-X', '-A', '-t', '-q', '-v',
		'ON_ERROR_STOP=1', '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
		'-d', 'postgres', '-c', $sql);
	chomp $out;
	return $out;
}

sub psql_file
{
	my ($file) = @_;
	run_quiet("$WORK/psql_file.log", "$PGBIN/psql", '-X', '-q', '-v',
		'ON_ERROR_STOP=1', '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
		'-d', 'postgres', '-o', '/dev/null', '-f', $file);
}

# Start a command in the background, stdout+stderr to $out.
sub spawn
{
	my ($cmd, $out, $env) = @_;
	my $pid = fork();
	die "fork failed: $!\n" unless defined $pid;
	if ($pid == 0)
	{
		$SIG{$_} = 'DEFAULT' for qw(INT TERM HUP ALRM);
		alarm(0);
		open STDIN, '<', '/dev/null';
		open STDOUT, '>', $out or POSIX::_exit(126);
		open STDERR, '>&', \*STDOUT or POSIX::_exit(126);
		if ($env) { $ENV{$_} = $env->{$_} for keys %$env; }
		exec @$cmd or POSIX::_exit(127);
	}
	$CHILDREN{$pid} = 1;
	return $pid;
}

# Wait for a child; after $timeout seconds TERM it (then KILL).  Returns the
# wait status ($?), or -1 on timeout.
sub wait_child
{
	my ($pid, $timeout) = @_;
	my $deadline = time + $timeout;
	while (1)
	{
		my $r = waitpid($pid, WNOHANG);
		if ($r == $pid)
		{
			delete $CHILDREN{$pid};
			return $?;
		}
		if ($r == -1)
		{
			delete $CHILDREN{$pid};
			return -1;
		}
		if (time > $deadline)
		{
			kill 'TERM', $pid;
			sleep 2;
			kill 'KILL', $pid if waitpid($pid, WNOHANG) == 0;
			waitpid($pid, 0);
			delete $CHILDREN{$pid};
			return -1;
		}
		sleep 0.05;
	}
}

sub machine_info
{
	my %m;
	$m{nproc} = NPROC();
	my $cpu = eval { slurp('/proc/cpuinfo') } // '';
	($m{cpu_model}) = $cpu =~ /^model name\s*:\s*(.+)$/m;
	$m{cpu_model} //= 'unknown';
	my $mem = eval { slurp('/proc/meminfo') } // '';
	my ($kb) = $mem =~ /^MemTotal:\s*(\d+)\s*kB/m;
	$m{memory_gib} = $kb ? sprintf('%.1f', $kb / 1048576) : 'unknown';
	$m{kernel} = (eval { capture('uname', '-sr') } // 'unknown');
	chomp $m{kernel};
	$m{hostname} = (eval { capture('uname', '-n') } // 'unknown');
	chomp $m{hostname};
	return \%m;
}

# The installed pgss_ng.so (what is measured): md5 prefix and mtime.
sub so_info
{
	my $lib = eval { capture("$PGBIN/pg_config", '--pkglibdir') } // '';
	chomp $lib;
	my $so = "$lib/pgss_ng.so";
	return 'not installed' unless -f $so;
	my $md5 = (eval { capture('md5sum', $so) } // '') =~ /^([0-9a-f]{12})/ ? $1 : '?';
	my $mt = strftime('%Y-%m-%d %H:%M:%S UTC', gmtime((stat $so)[9]));
	return "$so md5 $md5... built $mt";
}

sub loadavg
{
	my $l = eval { slurp('/proc/loadavg') } // '';
	my @f = split ' ', $l;
	return @f >= 3 ? "$f[0] $f[1] $f[2]" : 'unknown';
}

my $nproc_cache;
sub NPROC { $nproc_cache //= (capture('nproc') =~ /(\d+)/)[0] || 1; return $nproc_cache; }

# ---------------------------------------------------------------- points

# The settings points of the run: each variant's turn restarts the server
# once per point, with the point's max (both extensions) and pgss_ng
# settings, and runs the point's workloads.  Without --sizes-max there is one
# point, max 5,000, with every workload (the result has no point key).
# With --sizes-max, one point per max (the --workloads; the untracked server
# only at max 5,000, or the first max if 5,000 is not among them), and with
# --pressure-max the pair of text pressure points: cold_long with
# pgss_ng.query_text_memory at 2 MB per 5,000 entries (at least 256 kB, the
# minimum; pgss_ng only) and with room for every text twice over (every
# variant).  At --sizes' points the table is filled before each run and an
# eviction probe follows it.  Keys: name, max, ng (pgss_ng settings),
# workloads, variants (all when absent), sized (hot sets sized to max,
# fill, probes).
sub settings_points
{
	return ({ max => $MAX_ENTRIES }) unless $opt{'sizes-max'};
	my @max = split /,/, $opt{'sizes-max'};
	die "bad --sizes-max (a list of max values, each >= 100)\n"
	  if !@max || grep { !/^\d+$/ || $_ < 100 } @max;
	my ($with_none) = grep { $_ == $MAX_ENTRIES } @max;
	$with_none //= $max[0];
	my @p = map {
		{
			name      => "max $_",
			max       => $_ + 0,
			workloads => [ grep { $_ ne 'cold_long' } @workloads ],
			variants  => [ $_ == $with_none ? @VARIANTS : qw(pgss pgss_ng) ],
			sized     => 1
		}
	} @max;
	if (my $pm = $opt{'pressure-max'})
	{
		die "--pressure-max must be >= 100\n" if $pm < 100;
		my $small_kb = int($pm * 2048 / 5000);
		$small_kb = 256 if $small_kb < 256;
		my $room_mb = int(2 * 2 * $pm * ($LONG_TEXT_BYTES + 256) / 1048576) + 16;
		push @p,
		  {
			name      => 'text pressure',
			max       => $pm,
			ng        => { 'pgss_ng.query_text_memory' => "${small_kb}kB" },
			workloads => ['cold_long'],
			variants  => ['pgss_ng'],
			sized     => 1
		  },
		  {
			name      => 'no text pressure',
			max       => $pm,
			ng        => { 'pgss_ng.query_text_memory' => "${room_mb}MB" },
			workloads => ['cold_long'],
			variants  => [@VARIANTS],
			sized     => 1
		  };
	}
	@p = grep { @{ $_->{workloads} } } @p;
	die "--sizes-max: no workload to run (--workloads)\n" unless @p;
	return @p;
}

# The hot set of workload $w's definition at point $p.
sub hot_count
{
	my ($def, $p) = @_;
	return $def->{hot_shapes} unless $p->{sized} && $def->{hot_share};
	return int($p->{max} * $def->{hot_share});
}

# Workload $w's definition at point $p: at --sizes' points the hot set is
# sized to max and the fill kept; elsewhere as %WORKLOAD says, without fill.
sub def_for
{
	my ($w, $p) = @_;
	my %d = %{ $WORKLOAD{$w} };
	delete $d{fill} unless $p->{sized};
	if ($p->{sized} && $d{hot_share})
	{
		my $n = hot_count(\%d, $p);
		$d{scripts}    = [ "hot$n.sql\@9", 'cold.sql@1' ];
		$d{warm}       = ["warm$n.sql"];
		$d{warm_calls} = $n;
		$d{hot_shapes} = $n;
	}
	return \%d;
}

# ---------------------------------------------------------------- cluster

sub write_variant_conf
{
	my ($v, $p) = @_;
	my $max = $p->{max};
	my $c = "# written by pgss_bench_run.pl for variant $v\n";
	if ($v eq 'none')
	{
		$c .= "shared_preload_libraries = ''\n";
	}
	elsif ($v eq 'pgss')
	{
		$c .= "shared_preload_libraries = 'pg_stat_statements'\n"
		  . "pg_stat_statements.max = $max\n"
		  . "pg_stat_statements.track = top\n"
		  . "pg_stat_statements.track_utility = on\n"
		  . "pg_stat_statements.track_planning = off\n"
		  . "pg_stat_statements.save = off\n";
	}
	else
	{
		$c .= "shared_preload_libraries = 'pgss_ng'\n"
		  . "pgss_ng.max = $max\n"
		  . "pgss_ng.track = top\n"
		  . "pgss_ng.track_utility = on\n"
		  . "pgss_ng.track_planning = off\n";
		# the point's settings (--sizes: text pressure)
		my $ps = $p->{ng} || {};
		$c .= "$_ = '$ps->{$_}'\n" for sort keys %$ps;
		# --ng-setting: more pgss_ng GUCs (e.g. pgss_ng.track_cpu=on)
		for my $kv (@{ $opt{'ng-setting'} // [] })
		{
			my ($k, $val) = split /=/, $kv, 2;
			die "--ng-setting wants NAME=VALUE, got '$kv'\n"
			  unless defined $val && $k =~ /^pgss_ng\.\w+$/;
			$c .= "$k = '$val'\n";
		}
	}
	spew("$PGDATA/bench_variant.conf", $c);
}

# (Re)start the server with variant $v's settings at point $p.
sub start_server
{
	my ($v, $p) = @_;
	write_variant_conf($v, $p);
	if (-f "$PGDATA/postmaster.pid")
	{
		run_quiet("$WORK/pg_ctl.log", "$PGBIN/pg_ctl", '-D', $PGDATA,
			'-m', 'fast', '-w', '-t', '120', 'stop');
	}
	run_quiet("$WORK/pg_ctl.log", "$PGBIN/pg_ctl", '-D', $PGDATA, '-l',
		$LOG, '-w', '-t', '120', 'start');
}

# initdb, the settings every variant shares, the tables the workloads need,
# the wait-event sampler and the scripts.
sub setup_cluster
{
	say_ts("initdb in $PGDATA");
	run_quiet("$WORK/initdb.log", "$PGBIN/initdb", '-D', $PGDATA, '-U',
		'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale');
	open my $fh, '>>', "$PGDATA/postgresql.conf" or die "$!\n";
	print $fh <<CONF;

# ---- pgss_ng benchmark (same for every variant)
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $PORT
max_connections = 100
shared_buffers = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 8GB
checkpoint_timeout = 1h
autovacuum = off
jit = off
log_min_messages = warning
log_checkpoints = off
compute_query_id = auto
include 'bench_variant.conf'
CONF
	close $fh;

	start_server('none', $POINTS[0]);
	my %tables = map { $WORKLOAD{$_}{tables} => 1 } all_workloads();
	if ($tables{pgbench})
	{
		say_ts("pgbench -i -s $opt{'pgbench-scale'}");
		run_quiet("$WORK/pgbench_init.log", "$PGBIN/pgbench", '-h', $SOCK,
			'-p', $PORT, '-U', 'postgres', '-i', '-q', '-s', $opt{'pgbench-scale'},
			'postgres');
	}
	# Wait-event sampler: one sample a second of every pgbench backend.
	psql(<<'SQL');
CREATE FUNCTION bench_sample_waits(n int)
RETURNS TABLE (ev text, samples bigint) LANGUAGE plpgsql AS $$
DECLARE
  acc text[] := '{}';
BEGIN
  FOR i IN 1 .. n LOOP
    PERFORM pg_sleep(1);
    PERFORM pg_stat_clear_snapshot();
    acc := acc || ARRAY(
      SELECT CASE
               WHEN state = 'idle' THEN 'idle (client side)'
               WHEN wait_event IS NULL THEN 'CPU'
               ELSE wait_event_type || ':' || wait_event
             END
        FROM pg_stat_activity
       WHERE backend_type = 'client backend'
         AND pid <> pg_backend_pid()
         AND application_name = 'pgbench');
  END LOOP;
  RETURN QUERY SELECT a, count(*) FROM unnest(acc) a GROUP BY a;
END $$;
SQL
	if ($tables{w})
	{
		my $nhot = max_hot();
		say_ts("table w (100 columns) and query ids of $nhot hot shapes");
		my $cols = join(', ', map { "c$_ int" } 1 .. 100);
		psql("CREATE TABLE w ($cols)");
		psql("INSERT INTO w SELECT * FROM jsonb_populate_record(NULL::w, '{}')");
		for my $t (1 .. int(($nhot - 1) / 10000))
		{
			psql("CREATE TABLE w$t (LIKE w); INSERT INTO w$t SELECT * FROM w");
		}
		psql(<<'SQL');
CREATE FUNCTION bench_qid(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
    IF l ~ 'Query Identifier: ' THEN
      RETURN substring(l FROM 'Query Identifier: (-?[0-9]+)')::bigint;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
SQL
		# hot_shape(h), in SQL
		psql("SET compute_query_id = on; "
			  . "CREATE TABLE bench_hot AS SELECT h, bench_qid(format('SELECT c%s, c%s FROM w%s', "
			  . "1 + h % 100, 1 + (h / 100) % 100, CASE WHEN h >= 10000 THEN (h / 10000)::text ELSE '' END)) AS queryid "
			  . "FROM generate_series(0, $nhot - 1) h");
		my $bad = psql("SELECT count(*) FROM bench_hot WHERE queryid IS NULL OR queryid = 0");
		die "could not compute query ids of the hot shapes\n" if $bad;
		my $dist = psql("SELECT count(DISTINCT queryid) FROM bench_hot");
		die "hot shapes do not have distinct query ids ($dist)\n"
		  if $dist != $nhot;
	}
	setup_sized_probes() if $opt{'sizes-max'};
	write_scripts();
}

# Every workload some point runs, in report order.
sub all_workloads
{
	my %w = map { $_ => 1 } map { @{ $_->{workloads} || \@workloads } } @POINTS;
	return grep { $w{$_} } @WORKLOADS;
}

# The hot set sizes the run's workloads need, at each point.
sub hot_counts
{
	my %n = map { $_ => 1 } ($HOT_CHURN, $HOT_TRICKLE, $INC_ENTRIES, $INC_CHANGED);
	for my $p (@POINTS)
	{
		for my $w (@{ $p->{workloads} || \@workloads })
		{
			my $n = hot_count($WORKLOAD{$w}, $p);
			$n{$n} = 1 if $n;
		}
	}
	return sort { $a <=> $b } keys %n;
}

sub max_hot { return (hot_counts())[-1]; }

# cold_long's comment: $LONG_TEXT_BYTES bytes in all.
sub long_pad
{
	my $body = 'long text ' x (($LONG_TEXT_BYTES - 6) / 10 + 1);
	return '/* ' . substr($body, 0, $LONG_TEXT_BYTES - 6) . ' */';
}

sub hot_shape
{
	my ($h) = @_;
	return sprintf('SELECT c%d, c%d FROM w%s', 1 + $h % 100,
		1 + int($h / 100) % 100, $h >= 10000 ? int($h / 10000) : '');
}

# --sizes' probes, server side: bench_evict_probe (how long an eviction
# takes, from the outside) and bench_shmem (the shared memory in use).
sub setup_sized_probes
{
	# Runs n new statements (track = all, so that nested statements
	# count) one by one with the clock read around each, and the eviction
	# counter (info_sql) after each: a statement after which it moved
	# ran an eviction.  Returns how many did, by how much the counter moved,
	# their median duration and that of the others (ms).
	psql(<<'SQL');
CREATE FUNCTION bench_evict_probe(n int, info_sql text, pad text,
  OUT evictions int, OUT dealloc_delta bigint, OUT evict_ms float8,
  OUT other_ms float8, OUT seconds float8)
LANGUAGE plpgsql AS $$
DECLARE
  d0 bigint; d1 bigint; dstart bigint; t0 timestamptz; ms float8;
  ev float8[] := '{}'; oth float8[] := '{}';
  tstart timestamptz := clock_timestamp();
BEGIN
  EXECUTE info_sql INTO d0;
  dstart := d0;
  FOR i IN 1 .. n LOOP
    t0 := clock_timestamp();
    EXECUTE format('SELECT %s c%s, c%s, c%s, c%s FROM w', pad,
                   1 + floor(random() * 100)::int, 1 + floor(random() * 100)::int,
                   1 + floor(random() * 100)::int, 1 + floor(random() * 100)::int);
    ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    EXECUTE info_sql INTO d1;
    IF d1 > d0 THEN ev := ev || ms; ELSE oth := oth || ms; END IF;
    d0 := d1;
  END LOOP;
  evictions := cardinality(ev);
  dealloc_delta := d0 - dstart;
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) INTO evict_ms FROM unnest(ev) x;
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) INTO other_ms FROM unnest(oth) x;
  seconds := extract(epoch FROM clock_timestamp() - tstart);
END $$;
SQL
	# After read_sql (a full read, which maps every DSM segment that holds
	# entries or texts into this backend): the main shared memory of the
	# allocations named like pattern, the anonymous allocations (where
	# pg_stat_statements' hash entries are), and the DSM segments this
	# backend has mapped (where pgss_ng's DSA area grows), in bytes.
	psql(<<'SQL');
CREATE FUNCTION bench_shmem(read_sql text, pattern text,
  OUT named bigint, OUT anon bigint, OUT dsm bigint)
LANGUAGE plpgsql AS $$
BEGIN
  IF read_sql IS NOT NULL THEN EXECUTE read_sql; END IF;
  SELECT coalesce(sum(allocated_size), 0) INTO named
    FROM pg_shmem_allocations WHERE name LIKE pattern;
  SELECT coalesce(sum(allocated_size), 0) INTO anon
    FROM pg_shmem_allocations WHERE name = '<anonymous>';
  SELECT coalesce(sum(('x' || lpad(split_part(r, '-', 2), 16, '0'))::bit(64)::bigint
                    - ('x' || lpad(split_part(r, '-', 1), 16, '0'))::bit(64)::bigint), 0)
    INTO dsm
    FROM (SELECT split_part(l, ' ', 1) AS r
            FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l
           WHERE l LIKE '%/dev/shm/PostgreSQL.%') m;
END $$;
SQL
}

# The pgbench and psql scripts of %WORKLOAD, in the work directory.
sub write_scripts
{
	for my $n (hot_counts())
	{
		my $last = $n - 1;
		if ($n <= 10000)
		{
			spew("$WORK/hot$n.sql", <<SQL);
\\set h random(0, $last)
\\set a 1 + :h % 100
\\set b 1 + :h / 100
SELECT c:a, c:b FROM w;
SQL
		}
		else
		{
			# hot_shape(h) beyond table w
			spew("$WORK/hot$n.sql", <<SQL);
\\set h random(0, $last)
\\set a 1 + :h % 100
\\set b 1 + (:h / 100) % 100
\\set t :h / 10000
\\if :t = 0
SELECT c:a, c:b FROM w;
\\else
SELECT c:a, c:b FROM w:t;
\\endif
SQL
		}
		spew("$WORK/warm$n.sql",
			join('', map { hot_shape($_) . ";\n" } 0 .. $n - 1));
	}
	spew("$WORK/cold.sql", <<'SQL');
\set a random(1, 100)
\set b random(1, 100)
\set c random(1, 100)
\set d random(1, 100)
SELECT c:a, c:b, c:c, c:d FROM w;
SQL
	spew("$WORK/cold_long.sql", <<SQL);
\\set a random(1, 100)
\\set b random(1, 100)
\\set c random(1, 100)
\\set d random(1, 100)
SELECT @{[ long_pad() ]} c:a, c:b, c:c, c:d FROM w;
SQL
	# view_read prefill: distinct four-column shapes a < b < c < d.
	my @fill;
  OUTER:
	for my $a (1 .. 97)
	{
		for my $b ($a + 1 .. 98)
		{
			for my $c ($b + 1 .. 99)
			{
				for my $d ($c + 1 .. 100)
				{
					push @fill, "SELECT c$a, c$b, c$c, c$d FROM w;\n";
					last OUTER if @fill >= $PREFILL;
				}
			}
		}
	}
	spew("$WORK/prefill.sql", join('', @fill));
	spew("$WORK/view_pgss.sql",    "SELECT * FROM pg_stat_statements;\n");
	spew("$WORK/fn_pgss.sql",      "SELECT * FROM pg_stat_statements(false);\n");
	spew("$WORK/view_pgss_ng.sql", "SELECT * FROM pgss_ng;\n");
	spew("$WORK/inc_full.sql", "SELECT * FROM pgss_ng;\n");
	spew("$WORK/inc_since.sql",
		"SELECT * FROM pgss_ng(true, now() - interval '1 second');\n");
	spew("$WORK/fn_pgss_ng.sql",   "SELECT * FROM pgss_ng(false);\n");
}

# After a restart with variant $v: extension, vacuum, checkpoint, prewarm.
sub prepare_variant
{
	my ($v) = @_;
	# Made again at every turn, so that the SQL objects always match the
	# library loaded now (the installed build may change during a run).
	my $ext = { pgss => 'pg_stat_statements', pgss_ng => 'pgss_ng' }->{$v};
	psql("DROP EXTENSION IF EXISTS $ext; CREATE EXTENSION $ext") if $ext;
	my $have_pgbench = psql("SELECT count(*) FROM pg_class WHERE relname = 'pgbench_accounts'");
	if ($have_pgbench)
	{
		psql("VACUUM pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history");
	}
	psql("CHECKPOINT");
	if ($have_pgbench)
	{
		eval {
			psql("CREATE EXTENSION IF NOT EXISTS pg_prewarm");
			psql("SELECT pg_prewarm('pgbench_accounts'), pg_prewarm('pgbench_accounts_pkey')");
			1;
		} or print STDERR "pg_prewarm not available, continuing\n";
	}
}

sub variant_settings
{
	my $rows = psql(q{SELECT coalesce(jsonb_object_agg(name, setting ORDER BY name), '{}')
  FROM pg_settings
 WHERE name ~ '^(pg_stat_statements|pgss_ng)\.'
    OR name IN ('shared_preload_libraries', 'compute_query_id',
                'shared_buffers', 'fsync', 'synchronous_commit', 'autovacuum',
                'jit', 'max_connections', 'server_version')});
	return decode_json($rows);
}

sub reset_stats
{
	my ($v) = @_;
	psql("SELECT pg_stat_statements_reset()") if $v eq 'pgss';
	psql("SELECT pgss_ng_reset()")            if $v eq 'pgss_ng';
}

sub wait_backends_gone
{
	my $t = time;
	while (time - $t < 30)
	{
		my $n = psql("SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('pgbench', 'bench_reader')");
		return if $n == 0;
		sleep 0.1;
	}
	die "pgbench backends still present 30 s after pgbench exited\n";
}

# ---------------------------------------------------------------- one cell

# pgbench for workload definition $def at $c clients, or for its reader;
# @extra: more options (the probes').
sub pgbench_cmd
{
	my ($def, $c, $reader, @extra) = @_;
	my $threads = $c < NPROC() ? $c : NPROC();
	my @cmd = ("$PGBIN/pgbench", '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
		'-c', $c, '-j', $threads, '-T', $opt{duration}, @extra);
	if ($reader)
	{
		push @cmd, '-n', '-M', 'simple', '--log', "--log-prefix=$reader->{log}",
		  map { ('-f', "$WORK/$_\@1") } @{ $reader->{scripts} };
	}
	elsif ($def->{builtin})
	{
		push @cmd, @{ $def->{builtin} };
	}
	else
	{
		push @cmd, '-n', '-M', 'simple', map { ('-f', "$WORK/$_") } @{ $def->{scripts} };
	}
	push @cmd, 'postgres';
	return @cmd;
}

sub parse_pgbench
{
	my ($out) = @_;
	my %r;
	($r{tps})     = $out =~ /^tps = ([\d.]+) \(without initial connection time\)/m;
	($r{txns})    = $out =~ /^number of transactions actually processed: (\d+)/m;
	($r{failed})  = $out =~ /^number of failed transactions: (\d+)/m;
	($r{latency_ms}) = $out =~ /^latency average = ([\d.]+) ms/m;
	my @scripts;
	while ($out =~ /^SQL script (\d+): (\S+)\n(?:.*\n)*? - (\d+) transactions/mg)
	{
		$scripts[ $1 - 1 ] = { file => basename($2), txns => $3 + 0 };
	}
	$r{scripts} = \@scripts if @scripts;
	$r{$_} += 0 for grep { defined $r{$_} } qw(tps txns failed latency_ms);
	return \%r;
}

# pgbench --log files: "client txn time_us script_no epoch epoch_us".
# Latency per script (ms), under the given names.
sub parse_reader_logs
{
	my ($prefix, @names) = @_;
	my %lat;
	for my $f (glob("$prefix.*"))
	{
		open my $fh, '<', $f or next;
		while (<$fh>)
		{
			my @f = split;
			next unless @f >= 4 && $f[2] =~ /^\d+$/ && $f[3] =~ /^\d+$/;
			push @{ $lat{ $f[3] } }, $f[2] / 1000.0;
		}
		close $fh;
	}
	my %r;
	my %name = map { ($_ => $names[$_]) } 0 .. $#names;
	for my $s (keys %lat)
	{
		my @v = @{ $lat{$s} };
		my $sum = 0;
		$sum += $_ for @v;
		$r{ $name{$s} // "script$s" } = {
			n      => scalar @v,
			mean   => $sum / @v,
			median => median(@v),
			p95    => percentile(0.95, @v),
		};
	}
	return \%r;
}

# view_read_incremental's "during": what an incremental read returns, in
# the middle of the run.
sub incremental_rows
{
	return (
		incremental_rows =>
		  psql("SELECT count(*) FROM pgss_ng(false, now() - interval '1 second')") + 0,
		full_rows => psql("SELECT count(*) FROM pgss_ng(false)") + 0);
}

# The waits probe: a server-side sampler of the pgbench backends' wait
# events, once a second for the run's duration less a second.
sub waits_start
{
	my ($cell) = @_;
	my $nsamples = $opt{duration} > 1 ? $opt{duration} - 1 : 1;
	return spawn(
		[ "$PGBIN/psql", '-X', '-A', '-t', '-q', '-F', '|', '-h', $SOCK, '-p',
		  $PORT, '-U', 'postgres', '-d', 'postgres', '-c',
		  "SELECT * FROM bench_sample_waits($nsamples)" ],
		"$cell->{dir}/waits.out");
}

sub waits_finish
{
	my ($cell, $pid) = @_;
	my %waits;
	if (wait_child($pid, $opt{duration} + 90) == 0)
	{
		for my $l (split /\n/, slurp("$cell->{dir}/waits.out"))
		{
			my ($ev, $n) = split /\|/, $l;
			$waits{$ev} = $n + 0 if defined $n;
		}
	}
	return (waits => \%waits);
}

# The backend_cpu probe (--backend-cpu): the CPU time of the pgbench
# backends (the first field of /proc/PID/schedstat, ns) between a second
# after the run's start and 0.7 s before its end, and the transactions
# that pgbench --log says ended in that window: CPU per transaction,
# connection set-up and the run's ends left out.  A child process of this
# script samples; the server runs on this machine as the same user.
sub cpu_pgbench_args
{
	my ($cell) = @_;
	return () unless $opt{'backend-cpu'};
	return ('--log', "--log-prefix=$cell->{dir}/txlog");
}

sub cpu_start
{
	my ($cell) = @_;
	return undef unless $opt{'backend-cpu'};
	my $t0 = time;
	my $pid = fork();
	die "fork failed: $!\n" unless defined $pid;
	if ($pid == 0)
	{
		$SIG{$_} = 'DEFAULT' for qw(INT TERM HUP ALRM);
		alarm(0);
		my $out = eval { cpu_sample($cell, $t0) };
		$out = 'error ' . ($@ =~ s/\s+/ /gr) unless defined $out;
		open my $fh, '>', "$cell->{dir}/cpu.out";
		print $fh "$out\n";
		close $fh;
		POSIX::_exit(0);
	}
	$CHILDREN{$pid} = 1;
	return $pid;
}

# In the probe's child: "t1 cpu1 t2 cpu2 backends" (s since the epoch, ns).
# The backends are those of pgbench at t2, when only its clients' are
# there: at t1 its first connection (its checks, made before the
# clients connect) may still be, or a client not yet, however loaded the
# machine.  Every backend's CPU is read at t1; one that was not there yet
# counts from 0 (all its transactions are in the window).
sub cpu_sample
{
	my ($cell, $t0) = @_;
	my $pgbench_pids = sub {
		return split ' ', psql("SELECT string_agg(pid::text, ' ') FROM pg_stat_activity "
			  . "WHERE application_name = 'pgbench' AND backend_type = 'client backend'");
	};
	my $cpu_of = sub {
		my ($p) = @_;
		open my $fh, '<', "/proc/$p/schedstat" or return undef;
		my $l = <$fh>;
		close $fh;
		return defined $l ? (split ' ', $l)[0] : undef;
	};
	my $t1 = $t0 + 1;
	sleep($t1 - time) if $t1 > time;
	my %at_t1;
	for my $p ($pgbench_pids->())
	{
		my $c = $cpu_of->($p);
		$at_t1{$p} = $c if defined $c;
	}
	my $s1 = time;
	my $t2 = $t0 + $opt{duration} - 0.7;
	die "too short a run for the CPU probe\n" if $t2 <= $s1;
	sleep($t2 - time) if $t2 > time;
	my @pids = $pgbench_pids->();
	die "found " . scalar(@pids) . " pgbench backends, not $cell->{clients}\n"
	  unless @pids == $cell->{clients};
	my ($c1, $c2) = (0, 0);
	for my $p (@pids)
	{
		my $c = $cpu_of->($p);
		die "pgbench backend $p exited before the end of the run\n" unless defined $c;
		$c2 += $c;
		$c1 += $at_t1{$p} // 0;
	}
	my $s2 = time;
	return "$s1 $c1 $s2 $c2 " . scalar @pids;
}

sub cpu_finish
{
	my ($cell, $pid) = @_;
	return () unless defined $pid;
	return (backend_cpu => { error => 'probe timed out' })
	  if wait_child($pid, $opt{duration} + 30) != 0;
	my $l = eval { slurp("$cell->{dir}/cpu.out") } // 'error no output';
	chomp $l;
	return (backend_cpu => { error => $l }) if $l =~ /^error/;
	my ($s1, $c1, $s2, $c2, $n) = split ' ', $l;
	my $txns = 0;
	for my $f (glob("$cell->{dir}/txlog.*"))
	{
		open my $fh, '<', $f or next;
		# not $_: this runs inside a loop over @PROBES
		while (my $line = <$fh>)
		{
			my @f = split ' ', $line;
			next unless @f >= 6;
			my $end = $f[4] + $f[5] / 1e6;
			$txns++ if $end > $s1 && $end <= $s2;
		}
		close $fh;
	}
	return (backend_cpu => { error => 'no transactions in the window' })
	  unless $txns;
	return (
		backend_cpu => {
			us_per_txn => ($c2 - $c1) / 1000 / $txns,
			txns       => $txns,
			seconds    => $s2 - $s1,
			cpu_seconds => ($c2 - $c1) / 1e9,
			backends   => $n + 0,
		});
}

# At --sizes' points, before the warm-up: the workload's fill script until
# the table, with the warm-up's new statements after it, holds max
# entries (new statements: each makes one).  The warm-up comes after, so
# that the hot set is the newest when the run starts.
sub fill_table
{
	my ($v, $def, $c, $p, $dir) = @_;
	return unless $def->{fill} && $v ne 'none';
	my $have = psql("SELECT count(*) FROM " . ($v eq 'pgss' ? 'pg_stat_statements(false)' : 'pgss_ng(false)'));
	my $need = $p->{max} - $have - ($def->{warm_calls} // 0) + 1;
	return if $need <= 0;
	my $per = int(($need + $c - 1) / $c);
	my $threads = $c < NPROC() ? $c : NPROC();
	run_quiet("$dir/fill.log", "$PGBIN/pgbench", '-h', $SOCK, '-p', $PORT,
		'-U', 'postgres', '-n', '-M', 'simple', '-c', $c, '-j', $threads,
		'-t', $per, '-f', "$WORK/$def->{fill}", 'postgres');
}

# At --sizes' points, after the run: the shared memory in use (see
# bench_shmem), and how long one eviction takes (bench_evict_probe: max / 4
# new statements, at least 200, in one session; about five evictions).
sub sized_probes
{
	my ($v, $def, $p) = @_;
	my %r;
	my ($read, $pattern) = {
		none    => [ undef, '' ],
		pgss    => [ undef, 'pg_stat_statements%' ],
		pgss_ng => [ 'SELECT count(query) FROM pgss_ng', 'pgss_ng%' ],
	}->{$v}->@*;
	$r{shmem} = decode_json(psql("SELECT to_jsonb(s) FROM bench_shmem("
		  . (defined $read ? "'$read'" : 'NULL') . ", '$pattern') s"));
	return %r if $v eq 'none';
	my $n = int($p->{max} / 4);
	$n = 200 if $n < 200;
	my ($guc, $info) = $v eq 'pgss'
	  ? ('pg_stat_statements.track', 'pg_stat_statements_info')
	  : ('pgss_ng.track', 'pgss_ng_info');
	my $pad = $def->{long} ? long_pad() : '';
	local $ENV{PGOPTIONS} = "$ENV{PGOPTIONS} -c $guc=all";
	$r{evict_probe} = decode_json(psql("SELECT to_jsonb(e) FROM bench_evict_probe($n, "
		  . "'SELECT dealloc FROM $info', '$pad') e"));
	$r{evict_probe}{statements} = $n;
	return %r;
}

# What the variant recorded: entries, info, text memory, hot-set coverage.
sub collect_metrics
{
	my ($v, $def) = @_;
	return {} if $v eq 'none';
	my ($fn, $view, $info) = $v eq 'pgss'
	  ? ('pg_stat_statements(false)', 'pg_stat_statements', 'pg_stat_statements_info')
	  : ('pgss_ng(false)', 'pgss_ng', 'pgss_ng_info');
	my $hot = "NULL::jsonb";
	if (my $n = $def->{hot_shapes})
	{
		$hot = "(SELECT jsonb_build_object('n', count(*), 'present', count(s.queryid), 'calls', coalesce(sum(s.calls), 0))
		   FROM bench_hot h
		   LEFT JOIN (SELECT queryid, sum(calls) AS calls FROM $fn
		               WHERE toplevel GROUP BY queryid) s USING (queryid)
		  WHERE h.h < $n)";
	}
	elsif ($def->{hot_texts})
	{
		my $arr = join(', ', map { my $t = $_; $t =~ s/'/''/g; "'$t'" } @{ $def->{hot_texts} });
		$hot = "(SELECT jsonb_build_object('n', count(*), 'present', count(s.query), 'calls', coalesce(sum(s.calls), 0))
		   FROM unnest(ARRAY[$arr]) t(query)
		   LEFT JOIN (SELECT query, sum(calls) AS calls FROM $view
		               WHERE toplevel GROUP BY query) s USING (query))";
	}
	my $qtext = $v eq 'pgss'
	  ? "(SELECT size FROM pg_stat_file('pg_stat_tmp/pgss_query_texts.stat', true))"
	  : "(SELECT to_jsonb(i)->'qtext_bytes' FROM $info i)";
	my $j = psql("SELECT jsonb_build_object(
	   'entries', (SELECT count(*) FROM $fn),
	   'info', (SELECT to_jsonb(i) FROM $info i),
	   'qtext_bytes', $qtext,
	   'hot', $hot)");
	return decode_json($j);
}

# The executions of the hot set that pgbench and the warm-up made.
sub expected_hot_calls
{
	my ($def, $res) = @_;
	my $expected = $def->{warm_calls} // 0;
	if ($def->{hot_texts})
	{
		$expected = ($res->{txns} // 0) * $res->{hot}{n};
	}
	elsif ($res->{scripts})
	{
		# pgbench's per-script counts can add up to a little less than
		# its total (seen: 126 of 222,340 in a 3 s trickle run, with an
		# exact count of calls in pgss_ng): take the hot script's runs as
		# the total less the other scripts' runs
		my $others = 0;
		$others += $_->{txns} for @{ $res->{scripts} }[ 1 .. $#{ $res->{scripts} } ];
		$expected += ($res->{txns} // 0) - $others;
	}
	return $expected;
}

# One cell: reset, (at --sizes' points fill,) warm up, run pgbench (and
# the reader, and the probes), then read what the variant recorded once
# pgbench's backends are gone (pgss_ng flushes at backend exit), and at
# --sizes' points the memory and eviction probes.
sub run_cell
{
	my ($round, $v, $w, $c, $p) = @_;
	my $def = def_for($w, $p);
	my $dir = "$WORK/cell";
	remove_tree($dir);
	make_path($dir);
	my $cell = { dir => $dir, variant => $v, workload => $w, clients => $c };
	my %res = (round => $round, variant => $v, workload => $w, clients => $c);
	if (defined $p->{name})
	{
		$res{point} = $p->{name};
		$res{max}   = $p->{max};
	}
	my $t = time;
	reset_stats($v);
	fill_table($v, $def, $c, $p, $dir);
	psql_file("$WORK/$_") for @{ $def->{warm} || [] };
	$res{warmup_calls} = $def->{warm_calls} // 0;
	$res{entries_before} = $v eq 'none' ? undef
	  : psql("SELECT count(*) FROM " . ($v eq 'pgss' ? 'pg_stat_statements(false)' : 'pgss_ng(false)')) + 0;

	my %probe = map { ($_->{name} => scalar $_->{start}->($cell)) } @PROBES;
	my @extra = map { $_->{pgbench_args} ? $_->{pgbench_args}->($cell) : () } @PROBES;
	my $main = spawn([ pgbench_cmd($def, $c, undef, @extra) ], "$dir/pgbench.out");
	my $reader;
	if (my $r = $def->{reader})
	{
		sleep 0.2;
		$reader = spawn(
			[ pgbench_cmd($def, 1, {
				log => "$dir/readerlog",
				scripts => [ map { sprintf($_, $v) } @{ $r->{scripts} } ] }) ],
			"$dir/reader.out", { PGAPPNAME => 'bench_reader' });
	}
	if ($def->{during})
	{
		sleep($opt{duration} / 2);
		%res = (%res, $def->{during}->($cell));
	}
	my $limit = $opt{duration} + 90;
	my $st = wait_child($main, $limit);
	my $rst = defined $reader ? wait_child($reader, $limit) : 0;
	my $out = slurp("$dir/pgbench.out");
	if ($st != 0)
	{
		$res{error} = "pgbench exited with status " . ($st == -1 ? 'timeout' : $st >> 8)
		  . ": " . join(' | ', grep { /error|fatal|abort/i } split /\n/, $out);
		$res{error} = substr($res{error}, 0, 500);
	}
	my $pb = parse_pgbench($out);
	%res = (%res, %$pb);
	$res{error} //= "no tps in pgbench output" unless defined $pb->{tps};
	if (defined $reader)
	{
		$res{reader} = parse_reader_logs("$dir/readerlog", @{ $def->{reader}{names} });
		$res{reader_error} = "reader pgbench exited with status $rst" if $rst != 0;
	}
	%res = (%res, $_->{finish}->($cell, $probe{ $_->{name} })) for @PROBES;
	eval {
		wait_backends_gone();
		my $m = collect_metrics($v, $def);
		%res = (%res, %$m);
		%res = (%res, sized_probes($v, $def, $p)) if $p->{sized};
		1;
	} or do { $res{error} //= "metrics: $@"; chomp $res{error}; };
	$res{hot}{expected_calls} = expected_hot_calls($def, \%res)
	  if $res{hot} && $res{hot}{n};
	$res{seconds} = sprintf('%.1f', time - $t) + 0;
	return \%res;
}

# The progress line of one cell.
sub say_cell
{
	my ($res) = @_;
	my $extra = '';
	if ($res->{hot} && $res->{hot}{n})
	{
		$extra .= sprintf(' hot %d/%d', $res->{hot}{present}, $res->{hot}{n});
	}
	if ($res->{reader} && $res->{reader}{full})
	{
		$extra .= sprintf(' full %.2f ms incremental %.2f ms (%d of %d rows)',
			$res->{reader}{full}{median},
			($res->{reader}{incremental} // {median => 0})->{median},
			$res->{incremental_rows} // 0, $res->{full_rows} // 0);
	}
	if ($res->{reader} && $res->{reader}{view})
	{
		$extra .= sprintf(' view %.2f ms fn %.2f ms',
			$res->{reader}{view}{median},
			($res->{reader}{fn} // {median => 0})->{median});
	}
	if (my $b = $res->{backend_cpu})
	{
		$extra .= defined $b->{us_per_txn}
		  ? sprintf(' backend CPU %.1f us/txn', $b->{us_per_txn})
		  : " backend CPU: $b->{error}";
	}
	if (my $e = $res->{evict_probe})
	{
		$extra .= sprintf(' evictions %d: %.2f ms (others %.2f ms)',
			$e->{evictions}, $e->{evict_ms} // 0, $e->{other_ms} // 0);
	}
	my $wl = $res->{workload};
	$wl .= " ($res->{point})" if defined $res->{point};
	say_ts(sprintf('  %-14s c=%-3d %-18s tps=%s%s%s', $wl,
		$res->{clients}, $VNAME{ $res->{variant} },
		defined $res->{tps} ? sprintf('%.0f', $res->{tps}) : '?', $extra,
		$res->{error} ? "  ERROR: $res->{error}" : ''));
}

# ---------------------------------------------------------------- rounds

# Every round: each variant in turn (the order rotated from round to
# round), restarted at each settings point (their order rotated too), then
# every workload of the point at each of its client counts.
sub run_all
{
	my %data = (
		meta => {
			mode        => $mode,
			rounds      => $opt{rounds},
			duration    => $opt{duration},
			clients     => \@clients,
			scale       => $opt{'pgbench-scale'},
			workloads   => \@workloads,
			max         => $MAX_ENTRIES,
			track       => 'top',
			commit      => $opt{commit} // 'unknown',
			date        => strftime('%Y-%m-%d %H:%M:%S UTC', gmtime),
			stamp       => strftime('%Y%m%d-%H%M%S', gmtime),
			machine     => machine_info(),
			load_start  => loadavg(),
			pg_version  => (eval { capture("$PGBIN/postgres", '--version') } // 'unknown'),
			budget      => $opt{budget},
			hot_churn   => $HOT_CHURN,
			hot_trickle => $HOT_TRICKLE,
			trickle_weight => $TRICKLE_W,
			prefill     => $PREFILL,
			inc_entries => $INC_ENTRIES,
			inc_changed => $INC_CHANGED,
			backend_cpu => $opt{'backend-cpu'} ? 1 : 0,
		},
		settings => {},
		runs     => [],
		notes    => [],
	);
	chomp $data{meta}{pg_version};
	$data{meta}{pgss_ng_so} = so_info();
	if ($opt{'sizes-max'})
	{
		$data{meta}{points} = [ map { { %$_ } } @POINTS ];
		$data{meta}{long_text_bytes} = $LONG_TEXT_BYTES;
		$data{meta}{hot_churn_share} = $HOT_CHURN_SHARE;
	}
	setup_cluster();
	my $round_time = 0;
	my $rounds_done = 0;
	for my $r (1 .. $opt{rounds})
	{
		my $rt0 = time;
		if ($r > 1 && elapsed() + $round_time > $opt{budget})
		{
			my $msg = sprintf('stopped after %d of %d rounds: the next round '
				  . '(about %.0f s) would exceed the time budget of %d s',
				$rounds_done, $opt{rounds}, $round_time, $opt{budget});
			say_ts($msg);
			push @{ $data{notes} }, $msg;
			last;
		}
		my @order = @VARIANTS[ map { ($_ + $r - 1) % @VARIANTS } 0 .. $#VARIANTS ];
		for my $v (@order)
		{
			my @pts = grep { !$_->{variants} || grep { $_ eq $v } @{ $_->{variants} } } @POINTS;
			@pts = @pts[ map { ($_ + $r - 1) % @pts } 0 .. $#pts ];
			for my $p (@pts)
			{
				say_ts("round $r/$opt{rounds}: variant $VNAME{$v}: restart"
					  . (defined $p->{name} ? " ($p->{name})" : ''));
				start_server($v, $p);
				prepare_variant($v);
				$data{settings}{$v} //= variant_settings();
				$data{settings_by_point}{ $p->{name} }{$v} //= variant_settings()
				  if defined $p->{name};
				check_build($r, \%data) if $v eq 'pgss_ng';
				for my $w (@{ $p->{workloads} || \@workloads })
				{
					my $def = $WORKLOAD{$w};
					next if $def->{variants} && !grep { $_ eq $v } @{ $def->{variants} };
					for my $c (@{ $def->{clients} || \@clients })
					{
						my $res = run_cell($r, $v, $w, $c, $p);
						push @{ $data{runs} }, $res;
						say_cell($res);
					}
				}
			}
		}
		$rounds_done = $r;
		my $this = time - $rt0;
		$round_time = $this if $this > $round_time;
	}
	$data{meta}{rounds_done} = $rounds_done;
	$data{meta}{load_end} = loadavg();
	$data{meta}{seconds} = sprintf('%.0f', elapsed()) + 0;
	say_ts("done: $rounds_done round(s)");
	return \%data;
}

# At each pgss_ng turn: note the build measured, and warn when it is not
# the one the run started with.
sub check_build
{
	my ($r, $data) = @_;
	my $so = so_info();
	push @{ $data->{meta}{pgss_ng_so_by_round} }, "round $r: $so";
	return if $so eq $data->{meta}{pgss_ng_so};
	my $msg = "the installed pgss_ng.so changed during the run: "
	  . "round $r measured $so, not $data->{meta}{pgss_ng_so}. "
	  . "These results mix builds; run again.";
	say_ts("WARNING: $msg");
	push @{ $data->{notes} }, "**WARNING** $msg";
}
