#!/usr/bin/perl
# pgss_ng benchmark runner: untracked vs pg_stat_statements vs pgss_ng.
#
# Normally started through bench/run.sh, which handles running as root (the
# measurement phase then runs as "postgres").  See docs/performance.md.
#
# Phases:
#   --phase run     create a throwaway cluster, run every workload for every
#                   variant, round by round, write the raw results (JSON)
#   --phase report  read that JSON, write <name>.md, <name>.json, <name>.png
#                   into --out-dir (and optionally refresh docs/performance.md)
#   --phase all     both (the default)
#
# The run phase must not run as root (initdb refuses); it never switches
# users itself.
use strict;
use warnings;

use Getopt::Long qw(GetOptionsFromArray);
use JSON::PP;
use POSIX qw(strftime floor WNOHANG);
use Time::HiRes qw(time sleep);
use File::Temp qw(tempdir);
use File::Path qw(remove_tree make_path);
use File::Basename qw(dirname basename);
use File::Copy qw(copy);
use Cwd qw(abs_path);
use File::Spec;

$| = 1;

my $PGBIN = $ENV{PGSS_BENCH_PGBIN} // '/usr/lib/postgresql/15/bin';
if (!-x "$PGBIN/initdb")
{
	# not Debian's layout: the pg_config in PATH
	my $b = `pg_config --bindir 2>/dev/null` // '';
	chomp $b;
	$PGBIN = $b if $b && -x "$b/initdb";
}

# Workloads in report order.
my @ALL_WORKLOADS = qw(select_only tpcb hotcold_churn cold_only trickle view_read
  view_read_incremental);
# The workloads whose client count varies (view_read and
# view_read_incremental always run with 4 and 1 clients).
my @SCALE_WORKLOADS = qw(select_only tpcb hotcold_churn cold_only trickle);
my @VARIANTS      = qw(none pgss pgss_ng);
my %VNAME = (none => 'untracked', pgss => 'pg_stat_statements', pgss_ng => 'pgss_ng');

# Statement shapes on table w (100 int columns, one row).  Hot shapes are
# two-column selects "SELECT cA, cB FROM w" numbered h = 0.. with
# A = 1 + h % 100, B = 1 + h / 100; cold shapes are four-column selects with
# random columns (100^4 = 10^8 shapes).  Two- and four-column shapes never
# share a query id.
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
my $MAX_ENTRIES = 5000;

# Default parameters per mode.
my %MODES = (
	quick => {
		rounds => 3, duration => 3, clients => '4', scale => 2,
		workloads => join(',', @ALL_WORKLOADS), budget => 270, hard => 600,
	},
	# full: about 35 minutes on 2 cores (3 rounds of about 11.5 minutes:
	# 63 runs of 10 s plus about 0.5 s of warm-up and metrics each, and
	# the restarts)
	full => {
		rounds => 3, duration => 10, clients => '1,4,16,64', scale => 10,
		workloads => join(',', @ALL_WORKLOADS), budget => 3600, hard => 5400,
	},
	# scale: the pgbench workloads at 1, 4, 16 and 64 clients, one round
	# (about 6 minutes: 60 runs of 5 s plus set-up)
	scale => {
		rounds => 1, duration => 5, clients => '1,4,16,64', scale => 10,
		workloads => join(',', @SCALE_WORKLOADS), budget => 900, hard => 1500,
	},
	smoke => {
		rounds => 1, duration => 2, clients => '1', scale => 1,
		workloads => 'select_only', budget => 120, hard => 300,
	},
);

# Texts (normalized) of pgbench's built-in scripts: their "hot set".
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

# ---------------------------------------------------------------- options
my %opt = (phase => 'all');
GetOptionsFromArray(
	\@ARGV, \%opt,
	'phase=s', 'mode=s', 'quick', 'full', 'smoke', 'scale',
	'rounds=i', 'duration=i', 'clients=s', 'pgbench-scale=i', 'workloads=s',
	'budget=i', 'hard-limit=i', 'out-dir=s', 'name=s', 'workdir=s',
	'json-in=s', 'json-out=s', 'commit=s', 'repo=s', 'update-docs', 'keep',
	'ng-setting=s@', 'help',
) or die "usage: see docs/performance.md\n";
if ($opt{help})
{
	print <<'USAGE';
pgss_bench.pl [--quick|--full|--scale|--smoke] [--rounds N]
              [--duration SECONDS] [--clients 1,4,16,64] [--pgbench-scale N]
              [--workloads a,b,...] [--budget SECONDS] [--hard-limit SECONDS]
              [--out-dir DIR] [--name STEM] [--update-docs] [--keep]
              [--ng-setting NAME=VALUE ...]
              [--phase run|report|all] [--json-out FILE] [--json-in FILE]
modes (rounds x seconds per run, clients; time on 2 cores):
  --quick  3 x 3 s, 4 clients, every workload            about 4 minutes
  --full   3 x 10 s, 1/4/16/64 clients, every workload   about 35 minutes
  --scale  1 x 5 s, 1/4/16/64 clients, the pgbench
           workloads (not view_read*)                    about 6 minutes
  --smoke  1 x 2 s, 1 client, select_only                about 10 seconds
view_read runs with 4 clients and view_read_incremental with 1 whatever
--clients says.
workloads: select_only tpcb hotcold_churn cold_only trickle view_read
           view_read_incremental
USAGE
	exit 0;
}
for my $m (qw(quick full smoke scale)) { $opt{mode} = $m if $opt{$m}; }
$opt{mode} //= 'quick';
die "unknown mode $opt{mode}\n" unless $MODES{$opt{mode}};
my $M = $MODES{$opt{mode}};
$opt{rounds}       //= $M->{rounds};
$opt{duration}     //= $M->{duration};
$opt{clients}      //= $M->{clients};
$opt{'pgbench-scale'} //= $M->{scale};
$opt{workloads}    //= $M->{workloads};
$opt{budget}       //= $M->{budget};
$opt{'hard-limit'} //= $M->{hard};
my $SCRIPT_DIR = dirname(abs_path($0));
$opt{repo} //= dirname($SCRIPT_DIR);
$opt{'out-dir'} //= "$opt{repo}/bench/results";

die "--phase must be run, report or all\n"
  unless $opt{phase} =~ /^(run|report|all)$/;

if ($opt{phase} eq 'report')
{
	die "--phase report needs --json-in\n" unless $opt{'json-in'};
	my $data = decode_json(slurp($opt{'json-in'}));
	exit(report($data));
}

# ---------------------------------------------------------------- run phase
die "pgss_bench.pl: the run phase cannot run as root (initdb refuses); "
  . "use bench/run.sh, which runs it as postgres\n" if $> == 0;

my @workloads = split /,/, $opt{workloads};
for my $w (@workloads)
{
	die "unknown workload $w\n" unless grep { $_ eq $w } @ALL_WORKLOADS;
}
my @clients = split /,/, $opt{clients};
die "bad --clients\n" if !@clients || grep { !/^\d+$/ || $_ < 1 } @clients;
die "--duration must be >= 1\n" if $opt{duration} < 1;
die "--rounds must be >= 1\n"   if $opt{rounds} < 1;

if ($opt{phase} eq 'all')
{
	make_path($opt{'out-dir'});
	die "output directory $opt{'out-dir'} is not writable (use --out-dir)\n"
	  unless -w $opt{'out-dir'};
}

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
my $server_started = 0;
my $cleaned        = 0;

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

if ($opt{'json-out'})
{
	spew($opt{'json-out'}, JSON::PP->new->canonical->pretty->encode($data));
	print "raw results: $opt{'json-out'}\n";
}
my $rc = 0;
$rc = report($data) if $opt{phase} eq 'all';
$rc = 1 if grep { $_->{error} } @{ $data->{runs} };
exit $rc;

# ---------------------------------------------------------------- helpers

sub slurp
{
	my ($f) = @_;
	open my $fh, '<', $f or die "cannot read $f: $!\n";
	local $/;
	my $s = <$fh>;
	close $fh;
	return $s;
}

sub spew
{
	my ($f, $s) = @_;
	open my $fh, '>', "$f.tmp$$" or die "cannot write $f: $!\n";
	print $fh $s;
	close $fh or die "cannot write $f: $!\n";
	rename "$f.tmp$$", $f or die "cannot rename to $f: $!\n";
}

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

sub median
{
	my @v = sort { $a <=> $b } grep { defined } @_;
	return undef unless @v;
	my $n = @v;
	return $n % 2 ? $v[ ($n - 1) / 2 ] : ($v[ $n / 2 - 1 ] + $v[ $n / 2 ]) / 2;
}

sub percentile
{
	my ($p, @v) = @_;
	@v = sort { $a <=> $b } grep { defined } @v;
	return undef unless @v;
	my $i = int($p * (@v - 1) + 0.5);
	return $v[$i];
}

sub machine_info
{
	my %m;
	$m{nproc} = (capture('nproc') =~ /(\d+)/)[0];
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

# ---------------------------------------------------------------- cluster

sub write_variant_conf
{
	my ($v) = @_;
	my $c = "# written by pgss_bench.pl for variant $v\n";
	if ($v eq 'none')
	{
		$c .= "shared_preload_libraries = ''\n";
	}
	elsif ($v eq 'pgss')
	{
		$c .= "shared_preload_libraries = 'pg_stat_statements'\n"
		  . "pg_stat_statements.max = $MAX_ENTRIES\n"
		  . "pg_stat_statements.track = top\n"
		  . "pg_stat_statements.track_utility = on\n"
		  . "pg_stat_statements.track_planning = off\n"
		  . "pg_stat_statements.save = off\n";
	}
	else
	{
		$c .= "shared_preload_libraries = 'pgss_ng'\n"
		  . "pgss_ng.max = $MAX_ENTRIES\n"
		  . "pgss_ng.track = top\n"
		  . "pgss_ng.track_utility = on\n"
		  . "pgss_ng.track_planning = off\n";
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

sub start_server
{
	my ($v) = @_;
	write_variant_conf($v);
	if (-f "$PGDATA/postmaster.pid")
	{
		run_quiet("$WORK/pg_ctl.log", "$PGBIN/pg_ctl", '-D', $PGDATA,
			'-m', 'fast', '-w', '-t', '120', 'stop');
	}
	run_quiet("$WORK/pg_ctl.log", "$PGBIN/pg_ctl", '-D', $PGDATA, '-l',
		$LOG, '-w', '-t', '120', 'start');
	$server_started = 1;
}

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

	start_server('none');
	my $need_pgbench = grep { $_ eq 'select_only' || $_ eq 'tpcb' } @workloads;
	my $need_w = grep { !/^(select_only|tpcb)$/ } @workloads;
	if ($need_pgbench)
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
	if ($need_w)
	{
		say_ts("table w (100 columns) and query ids of $HOT_TRICKLE hot shapes");
		my $cols = join(', ', map { "c$_ int" } 1 .. 100);
		psql("CREATE TABLE w ($cols)");
		psql("INSERT INTO w SELECT * FROM jsonb_populate_record(NULL::w, '{}')");
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
		psql("SET compute_query_id = on; "
			  . "CREATE TABLE bench_hot AS SELECT h, bench_qid(format('SELECT c%s, c%s FROM w', 1 + h % 100, 1 + h / 100)) AS queryid "
			  . "FROM generate_series(0, $HOT_TRICKLE - 1) h");
		my $bad = psql("SELECT count(*) FROM bench_hot WHERE queryid IS NULL OR queryid = 0");
		die "could not compute query ids of the hot shapes\n" if $bad;
		my $dist = psql("SELECT count(DISTINCT queryid) FROM bench_hot");
		die "hot shapes do not have distinct query ids ($dist)\n"
		  if $dist != $HOT_TRICKLE;
	}
	write_scripts();
}

sub hot_shape
{
	my ($h) = @_;
	return sprintf('SELECT c%d, c%d FROM w', 1 + $h % 100, 1 + int($h / 100));
}

sub write_scripts
{
	for my $n ($HOT_CHURN, $HOT_TRICKLE, $INC_ENTRIES, $INC_CHANGED)
	{
		my $last = $n - 1;
		spew("$WORK/hot$n.sql", <<SQL);
\\set h random(0, $last)
\\set a 1 + :h % 100
\\set b 1 + :h / 100
SELECT c:a, c:b FROM w;
SQL
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

sub pgbench_cmd
{
	my ($w, $v, $c) = @_;
	my $threads = $c < NPROC() ? $c : NPROC();
	my @cmd = ("$PGBIN/pgbench", '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
		'-c', $c, '-j', $threads, '-T', $opt{duration});
	if ($w eq 'select_only')
	{
		push @cmd, '-S', '-M', 'prepared';
	}
	elsif ($w eq 'tpcb')
	{
		# the default TPC-B-like script, default (simple) protocol
	}
	elsif ($w eq 'hotcold_churn' || $w eq 'view_read')
	{
		push @cmd, '-n', '-M', 'simple', '-f', "$WORK/hot$HOT_CHURN.sql\@9",
		  '-f', "$WORK/cold.sql\@1";
	}
	elsif ($w eq 'cold_only')
	{
		push @cmd, '-n', '-M', 'simple', '-f', "$WORK/cold.sql";
	}
	elsif ($w eq 'view_read_incremental')
	{
		# the first $INC_CHANGED hot shapes, over and over
		push @cmd, '-n', '-M', 'simple', '-f', "$WORK/hot$INC_CHANGED.sql";
	}
	elsif ($w eq 'trickle')
	{
		push @cmd, '-n', '-M', 'simple', '-f',
		  "$WORK/hot$HOT_TRICKLE.sql\@$TRICKLE_W", '-f', "$WORK/cold.sql\@1";
	}
	push @cmd, 'postgres';
	return @cmd;
}

my $nproc_cache;
sub NPROC { $nproc_cache //= (capture('nproc') =~ /(\d+)/)[0] || 1; return $nproc_cache; }

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
sub parse_reader_logs
{
	my ($prefix, @names) = @_;
	@names = qw(view fn) unless @names;
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

# What the variant recorded: entries, info, text memory, hot-set coverage.
sub collect_metrics
{
	my ($v, $w) = @_;
	return {} if $v eq 'none';
	my ($fn, $view, $info) = $v eq 'pgss'
	  ? ('pg_stat_statements(false)', 'pg_stat_statements', 'pg_stat_statements_info')
	  : ('pgss_ng(false)', 'pgss_ng', 'pgss_ng_info');
	my $hot = "NULL::jsonb";
	if ($w =~ /^(hotcold_churn|view_read|trickle)$/)
	{
		my $n = $w eq 'trickle' ? $HOT_TRICKLE : $HOT_CHURN;
		$hot = "(SELECT jsonb_build_object('n', count(*), 'present', count(s.queryid), 'calls', coalesce(sum(s.calls), 0))
		   FROM bench_hot h
		   LEFT JOIN (SELECT queryid, sum(calls) AS calls FROM $fn
		               WHERE toplevel GROUP BY queryid) s USING (queryid)
		  WHERE h.h < $n)";
	}
	elsif ($BUILTIN_TEXTS{$w})
	{
		my $arr = join(', ', map { my $t = $_; $t =~ s/'/''/g; "'$t'" } @{ $BUILTIN_TEXTS{$w} });
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

sub run_cell
{
	my ($round, $v, $w, $c) = @_;
	my $dir = "$WORK/cell";
	remove_tree($dir);
	make_path($dir);
	my %res = (round => $round, variant => $v, workload => $w, clients => $c);
	my $t = time;
	reset_stats($v);
	my $warm = 0;
	if ($w eq 'hotcold_churn' || $w eq 'view_read')
	{
		psql_file("$WORK/warm$HOT_CHURN.sql");
		$warm = $HOT_CHURN;
		psql_file("$WORK/prefill.sql") if $w eq 'view_read';
	}
	elsif ($w eq 'trickle')
	{
		psql_file("$WORK/warm$HOT_TRICKLE.sql");
		$warm = $HOT_TRICKLE;
	}
	elsif ($w eq 'view_read_incremental')
	{
		psql_file("$WORK/warm$INC_ENTRIES.sql");
		$warm = $INC_ENTRIES;
	}
	$res{warmup_calls} = $warm;
	$res{entries_before} = $v eq 'none' ? undef
	  : psql("SELECT count(*) FROM " . ($v eq 'pgss' ? 'pg_stat_statements(false)' : 'pgss_ng(false)')) + 0;

	my $nsamples = $opt{duration} > 1 ? $opt{duration} - 1 : 1;
	my $sampler = spawn(
		[ "$PGBIN/psql", '-X', '-A', '-t', '-q', '-F', '|', '-h', $SOCK, '-p',
		  $PORT, '-U', 'postgres', '-d', 'postgres', '-c',
		  "SELECT * FROM bench_sample_waits($nsamples)" ],
		"$dir/waits.out");
	my @cmd = pgbench_cmd($w, $v, $c);
	my $main = spawn(\@cmd, "$dir/pgbench.out");
	my $reader;
	if ($w eq 'view_read_incremental')
	{
		sleep 0.2;
		$reader = spawn(
			[ "$PGBIN/pgbench", '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
			  '-n', '-M', 'simple', '-c', '1', '-j', '1', '-T', $opt{duration},
			  '--log', "--log-prefix=$dir/readerlog",
			  '-f', "$WORK/inc_full.sql\@1", '-f', "$WORK/inc_since.sql\@1",
			  'postgres' ],
			"$dir/reader.out", { PGAPPNAME => 'bench_reader' });
		# what an incremental read returns, in the middle of the run
		sleep($opt{duration} / 2);
		$res{incremental_rows} =
		  psql("SELECT count(*) FROM pgss_ng(false, now() - interval '1 second')") + 0;
		$res{full_rows} = psql("SELECT count(*) FROM pgss_ng(false)") + 0;
	}
	elsif ($w eq 'view_read' && $v ne 'none')
	{
		sleep 0.2;
		$reader = spawn(
			[ "$PGBIN/pgbench", '-h', $SOCK, '-p', $PORT, '-U', 'postgres',
			  '-n', '-M', 'simple', '-c', '1', '-j', '1', '-T', $opt{duration},
			  '--log', "--log-prefix=$dir/readerlog",
			  '-f', "$WORK/view_$v.sql\@1", '-f', "$WORK/fn_$v.sql\@1", 'postgres' ],
			"$dir/reader.out", { PGAPPNAME => 'bench_reader' });
	}
	my $limit = $opt{duration} + 90;
	my $st = wait_child($main, $limit);
	my $rst = defined $reader ? wait_child($reader, $limit) : 0;
	my $sst = wait_child($sampler, $limit);
	my $out = slurp("$dir/pgbench.out");
	if ($st != 0)
	{
		$res{error} = "pgbench exited with status " . ($st == -1 ? 'timeout' : $st >> 8)
		  . ": " . join(' | ', grep { /error|fatal|abort/i } split /\n/, $out);
		$res{error} = substr($res{error}, 0, 500);
	}
	my $p = parse_pgbench($out);
	%res = (%res, %$p);
	$res{error} //= "no tps in pgbench output" unless defined $p->{tps};
	if (defined $reader)
	{
		$res{reader} = $w eq 'view_read_incremental'
		  ? parse_reader_logs("$dir/readerlog", 'full', 'incremental')
		  : parse_reader_logs("$dir/readerlog");
		$res{reader_error} = "reader pgbench exited with status $rst" if $rst != 0;
	}
	my %waits;
	if ($sst == 0)
	{
		for my $l (split /\n/, slurp("$dir/waits.out"))
		{
			my ($ev, $n) = split /\|/, $l;
			$waits{$ev} = $n + 0 if defined $n;
		}
	}
	$res{waits} = \%waits;
	eval {
		wait_backends_gone();
		my $m = collect_metrics($v, $w);
		%res = (%res, %$m);
		1;
	} or do { $res{error} //= "metrics: $@"; chomp $res{error}; };
	if ($res{hot} && $res{hot}{n})
	{
		my $expected = $warm;
		if ($BUILTIN_TEXTS{$w})
		{
			$expected = ($res{txns} // 0) * $res{hot}{n};
		}
		elsif ($res{scripts})
		{
			# pgbench's per-script counts can add up to a little less than
			# its total (seen: 126 of 222,340 in a 3 s trickle run, with an
			# exact count of calls in pgss_ng): take the hot script's runs as
			# the total less the other scripts' runs
			my $others = 0;
			$others += $_->{txns} for @{ $res{scripts} }[ 1 .. $#{ $res{scripts} } ];
			$expected += ($res{txns} // 0) - $others;
		}
		$res{hot}{expected_calls} = $expected;
	}
	$res{seconds} = sprintf('%.1f', time - $t) + 0;
	return \%res;
}

sub run_all
{
	my %data = (
		meta => {
			mode        => $opt{mode},
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
		},
		settings => {},
		runs     => [],
		notes    => [],
	);
	chomp $data{meta}{pg_version};
	$data{meta}{pgss_ng_so} = so_info();
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
		# rotate the variant order from round to round
		my @order = @VARIANTS[ map { ($_ + $r - 1) % @VARIANTS } 0 .. $#VARIANTS ];
		for my $v (@order)
		{
			say_ts("round $r/$opt{rounds}: variant $VNAME{$v}: restart");
			start_server($v);
			prepare_variant($v);
			$data{settings}{$v} //= variant_settings();
			if ($v eq 'pgss_ng')
			{
				my $so = so_info();
				push @{ $data{meta}{pgss_ng_so_by_round} }, "round $r: $so";
				if ($so ne $data{meta}{pgss_ng_so})
				{
					my $msg = "the installed pgss_ng.so changed during the run: "
					  . "round $r measured $so, not $data{meta}{pgss_ng_so}. "
					  . "These results mix builds; run again.";
					say_ts("WARNING: $msg");
					push @{ $data{notes} }, "**WARNING** $msg";
				}
			}
			for my $w (@workloads)
			{
				next if $w eq 'view_read' && $v eq 'none';
				# pg_stat_statements has no incremental read
				next if $w eq 'view_read_incremental' && $v ne 'pgss_ng';
				for my $c ($w eq 'view_read' ? (4)
					: $w eq 'view_read_incremental' ? (1) : @clients)
				{
					my $res = run_cell($r, $v, $w, $c);
					push @{ $data{runs} }, $res;
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
					say_ts(sprintf('  %-14s c=%-3d %-18s tps=%s%s%s', $w, $c, $VNAME{$v},
						defined $res->{tps} ? sprintf('%.0f', $res->{tps}) : '?', $extra,
						$res->{error} ? "  ERROR: $res->{error}" : ''));
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

# ================================================================ report

sub fmt_num
{
	my ($x, $d) = @_;
	return '-' unless defined $x;
	$d //= 0;
	my $s = sprintf("%.${d}f", $x);
	1 while $s =~ s/^(-?\d+)(\d{3})/$1,$2/;
	return $s;
}

sub fmt_bytes
{
	my ($b) = @_;
	return '-' unless defined $b;
	return sprintf('%.1f MB', $b / 1048576) if $b >= 1048576;
	return sprintf('%.0f kB', $b / 1024) if $b >= 1024;
	return "$b B";
}

sub fmt_ratio { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-'; }
sub fmt_pct { my ($r) = @_; return defined $r ? sprintf('%.1f%%', 100 * $r) : '-'; }

# Group runs by (workload, clients, variant) and summarize.
sub summarize
{
	my ($data) = @_;
	my %g;
	for my $run (@{ $data->{runs} })
	{
		push @{ $g{ $run->{workload} }{ $run->{clients} }{ $run->{variant} } }, $run;
	}
	my @rows;
	for my $w (@ALL_WORKLOADS)
	{
		next unless $g{$w};
		for my $c (sort { $a <=> $b } keys %{ $g{$w} })
		{
			my %byv;
			for my $v (@VARIANTS)
			{
				my $runs = $g{$w}{$c}{$v} or next;
				my @ok = grep { defined $_->{tps} && !$_->{error} } @$runs;
				my %s = (workload => $w, clients => $c, variant => $v,
					rounds => scalar @ok, errors => scalar(@$runs) - scalar(@ok));
				$s{error_text} = (grep { $_ } map { $_->{error} } @$runs)[0];
				my @tps = map { $_->{tps} } @ok;
				$s{tps}     = median(@tps);
				$s{tps_min} = (sort { $a <=> $b } @tps)[0];
				$s{tps_max} = (sort { $b <=> $a } @tps)[0];
				$s{tps_all} = \@tps;
				my @hot = grep { $_->{hot} && $_->{hot}{n} } @ok;
				if (@hot)
				{
					my @ret = map { $_->{hot}{present} / $_->{hot}{n} } @hot;
					my @cov = map { $_->{hot}{expected_calls} ? $_->{hot}{calls} / $_->{hot}{expected_calls} : undef } @hot;
					$s{hot_n} = $hot[0]{hot}{n};
					$s{hot_kept_min} = (sort { $a <=> $b } @ret)[0];
					$s{hot_kept_med} = median(@ret);
					my @c = sort { $a <=> $b } grep { defined } @cov;
					$s{hot_calls_min} = $c[0];
					$s{hot_calls_max} = $c[-1];
				}
				$s{entries} = median(map { $_->{entries} } @ok);
				$s{dealloc} = median(map { $_->{info} ? $_->{info}{dealloc} : undef } @ok);
				$s{qtext_bytes} = median(map { $_->{qtext_bytes} } @ok);
				my %info;
				for my $run (@ok)
				{
					next unless $run->{info};
					for my $k (keys %{ $run->{info} })
					{
						my $val = $run->{info}{$k};
						push @{ $info{$k} }, $val if defined $val && !ref $val && $val =~ /^-?\d+(\.\d+)?$/;
					}
				}
				$s{info} = { map { $_ => median(@{ $info{$_} }) } keys %info };
				my %waits;
				for my $run (@ok)
				{
					$waits{$_} += $run->{waits}{$_} for keys %{ $run->{waits} || {} };
				}
				$s{waits} = \%waits;
				$s{full_rows} = median(map { $_->{full_rows} } @ok);
				$s{incremental_rows} = median(map { $_->{incremental_rows} } @ok);
				my @rd = grep { $_->{reader} && ($_->{reader}{view} || $_->{reader}{full}) } @ok;
				if (@rd)
				{
					for my $k (qw(view fn full incremental))
					{
						my @x = grep { $_->{reader}{$k} } @rd;
						next unless @x;
						$s{reader}{$k} = {
							median => median(map { $_->{reader}{$k}{median} } @x),
							p95    => median(map { $_->{reader}{$k}{p95} } @x),
							n      => median(map { $_->{reader}{$k}{n} } @x),
						};
					}
				}
				$byv{$v} = \%s;
			}
			for my $v (keys %byv)
			{
				my $s = $byv{$v};
				$s->{vs_none} = $byv{none} && $byv{none}{tps} && defined $s->{tps}
				  ? $s->{tps} / $byv{none}{tps} : undef;
				$s->{vs_pgss} = $byv{pgss} && $byv{pgss}{tps} && defined $s->{tps}
				  ? $s->{tps} / $byv{pgss}{tps} : undef;
			}
			push @rows, map { $byv{$_} } grep { $byv{$_} } @VARIANTS;
		}
	}
	return \@rows;
}

# Top $k events among the samples of busy backends (not idle between
# transactions), with how many samples were busy.
sub top_waits
{
	my ($w, $k) = @_;
	my ($tot, $busy) = (0, 0);
	for my $e (keys %$w)
	{
		$tot += $w->{$e};
		$busy += $w->{$e} unless $e =~ /^idle/;
	}
	return '-' unless $tot;
	return "all idle (n=$tot)" unless $busy;
	my @e = sort { $w->{$b} <=> $w->{$a} || $a cmp $b } grep { !/^idle/ } keys %$w;
	@e = @e[ 0 .. $k - 1 ] if @e > $k;
	return join(', ', map { sprintf('%s %.0f%%', $_, 100 * $w->{$_} / $busy) } @e)
	  . " ($busy of $tot busy)";
}

# The report body (everything after the title), shared by the results file
# and docs/performance.md.
sub report_body
{
	my ($data, $rows, $png) = @_;
	my $m = $data->{meta};
	my $mc = $m->{machine};
	my @o;
	push @o, "- **date**: $m->{date}; **commit**: `$m->{commit}`; "
	  . "**mode**: $m->{mode} ($m->{rounds_done} of $m->{rounds} rounds, "
	  . "$m->{duration} s per run, clients " . join(', ', @{ $m->{clients} })
	  . ", pgbench scale $m->{scale}; took $m->{seconds} s)";
	push @o, "- **machine**: $mc->{nproc} CPUs ($mc->{cpu_model}), "
	  . "$mc->{memory_gib} GiB RAM, $mc->{kernel}; load average at start "
	  . "$m->{load_start}, at end $m->{load_end}";
	push @o, "- **pgss_ng build measured**: $m->{pgss_ng_so}" if $m->{pgss_ng_so};
	push @o, "- **server**: $m->{pg_version}; one throwaway cluster, unix socket "
	  . "only, shared_buffers = 256MB, fsync/synchronous_commit/full_page_writes "
	  . "off, autovacuum off, jit off; restarted for each variant in each round "
	  . "(order rotated every round)";
	push @o, "- **tracking settings** (both extensions): max = $m->{max}, "
	  . "track = $m->{track}, track_utility = on, track_planning = off"
	  . " (pg_stat_statements.save = off)";
	for my $v (qw(pgss pgss_ng))
	{
		my $s = $data->{settings}{$v} or next;
		my @k = grep { /^(pg_stat_statements|pgss_ng)\./ } sort keys %$s;
		push @o, "- **$VNAME{$v} GUCs as set**: "
		  . join(', ', map { "`$_=$s->{$_}`" } @k) if @k;
	}
	push @o, "- **note**: $_" for @{ $data->{notes} || [] };
	push @o, '';
	push @o, "TPS is the median over rounds (pgbench \"without initial connection "
	  . "time\"); the ratios compare medians. *hot kept*: hot shapes present at "
	  . "the end (worst round). *hot calls*: calls recorded for the hot set / "
	  . "executions pgbench made plus the warm-up (worst round; counts for "
	  . "select_only and tpcb are taken from the statement texts). *text memory*: "
	  . "pg_stat_statements' query text file; pgss_ng_info.qtext_bytes (\"-\" "
	  . "when that column does not exist). *top waits*: pg_stat_activity of the "
	  . "pgbench backends sampled once a second; shares among the samples of "
	  . "busy backends (active, or idle in a transaction), CPU = active "
	  . "without a wait event; then how many samples were busy (the rest were "
	  . "idle, waiting for pgbench).";
	push @o, '';
	push @o, '| workload | clients | variant | TPS | range | vs untracked | vs pg_stat_statements | hot kept | hot calls | entries | dealloc | text memory | top waits |';
	push @o, '| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |';
	for my $s (@$rows)
	{
		my $tps = defined $s->{tps} ? fmt_num($s->{tps}) : 'error';
		my $range = defined $s->{tps_min} && @{ $s->{tps_all} } > 1
		  ? fmt_num($s->{tps_min}) . ' – ' . fmt_num($s->{tps_max}) : '-';
		$range .= " ($s->{errors} failed)" if $s->{errors};
		my $hk = defined $s->{hot_kept_min} ? fmt_pct($s->{hot_kept_min}) . " of $s->{hot_n}" : '-';
		my $hc = defined $s->{hot_calls_min} ? fmt_pct($s->{hot_calls_min}) : '-';
		my $wl = $s->{workload};
		$wl .= ' (churn TPS, 1 reader)' if $wl eq 'view_read';
		push @o, join(' | ', '', $wl, $s->{clients}, $VNAME{ $s->{variant} },
			$tps, $range,
			$s->{variant} eq 'none' ? '1.00x' : fmt_ratio($s->{vs_none}),
			$s->{variant} eq 'pgss' ? '1.00x' : fmt_ratio($s->{vs_pgss}),
			$hk, $hc, fmt_num($s->{entries}), fmt_num($s->{dealloc}),
			fmt_bytes($s->{qtext_bytes}), top_waits($s->{waits}, 3), '');
		$o[-1] =~ s/^ //;
		$o[-1] =~ s/ $//;
	}
	# scaling: one row per workload and client count, when several client
	# counts were run
	my %ncl;
	$ncl{ $_->{clients} } = 1 for @$rows;
	if (keys %ncl > 1)
	{
		push @o, '';
		push @o, '### Scaling: TPS by client count';
		push @o, '';
		push @o, "The same medians as above, one row per workload and client "
		  . "count; *top waits* as above, of each variant's backends (top 2).";
		push @o, '';
		push @o, '| workload | clients | untracked | pg_stat_statements | pgss_ng | pgss_ng / untracked | pgss_ng / pg_stat_statements | top waits untracked | top waits pg_stat_statements | top waits pgss_ng |';
		push @o, '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |';
		my %cell;
		$cell{ $_->{workload} }{ $_->{clients} }{ $_->{variant} } = $_ for @$rows;
		for my $w (grep { $cell{$_} && !/^view_read/ } @ALL_WORKLOADS)
		{
			for my $c (sort { $a <=> $b } keys %{ $cell{$w} })
			{
				my $b = $cell{$w}{$c};
				my $ng = $b->{pgss_ng} || {};
				push @o, '| ' . join(' | ', $w, $c,
					(map { $b->{$_} && defined $b->{$_}{tps} ? fmt_num($b->{$_}{tps}) : '-' } @VARIANTS),
					fmt_ratio($ng->{vs_none}), fmt_ratio($ng->{vs_pgss}),
					(map { $b->{$_} ? top_waits($b->{$_}{waits}, 2) : '-' } @VARIANTS)) . ' |';
			}
		}
	}
	my @errs = grep { $_->{errors} } @$rows;
	if (@errs)
	{
		push @o, '';
		push @o, "**Failed runs**: "
		  . join('; ', map { "$_->{workload} c=$_->{clients} $VNAME{$_->{variant}}: $_->{errors} ($_->{error_text})" } @errs);
	}

	# view_read
	my @vr = grep { $_->{workload} eq 'view_read' && $_->{reader} } @$rows;
	my %vrb = map { $_->{variant} => $_ } @vr;
	if (@vr)
	{
		push @o, '';
		push @o, '### view_read: reading the statistics while 4 clients run hotcold_churn';
		push @o, '';
		push @o, "One extra pgbench client alternates `SELECT * FROM <view>` and the "
		  . "text-free function (`pg_stat_statements(false)` / `pgss_ng(false)`); "
		  . "the table is filled to $m->{max} entries first ($m->{hot_churn} hot + "
		  . "$m->{prefill} cold shapes). Latency in ms: median over rounds of each "
		  . "round's median and 95th percentile.";
		push @o, '';
		push @o, '| variant | view median | view p95 | fn(false) median | fn(false) p95 | view vs pg_stat_statements | fn vs pg_stat_statements | reads per run | entries | churn TPS |';
		push @o, '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
		for my $s (@vr)
		{
			my $rv = $s->{reader}{view} || {};
			my $rf = $s->{reader}{fn} || {};
			my $p = $vrb{pgss} && $vrb{pgss}{reader};
			my $rvv = $p && $p->{view} && $p->{view}{median} && defined $rv->{median} ? $rv->{median} / $p->{view}{median} : undef;
			my $rff = $p && $p->{fn} && $p->{fn}{median} && defined $rf->{median} ? $rf->{median} / $p->{fn}{median} : undef;
			push @o, "| $VNAME{$s->{variant}} | " . join(' | ',
				fmt_num($rv->{median}, 2), fmt_num($rv->{p95}, 2),
				fmt_num($rf->{median}, 2), fmt_num($rf->{p95}, 2),
				fmt_ratio($rvv), fmt_ratio($rff),
				fmt_num(($rv->{n} // 0) + ($rf->{n} // 0)),
				fmt_num($s->{entries}), fmt_num($s->{tps})) . ' |';
		}
	}

	# view_read_incremental
	my @vi = grep { $_->{workload} eq 'view_read_incremental' && $_->{reader} } @$rows;
	if (@vi)
	{
		push @o, '';
		push @o, '### view_read_incremental: a full read and an incremental read (pgss_ng)';
		push @o, '';
		push @o, "The table holds $INC_ENTRIES hot shapes; one pgbench client keeps "
		  . "running $INC_CHANGED of them (5%), and a reader alternates "
		  . "`SELECT * FROM pgss_ng` with `SELECT * FROM pgss_ng(true, now() - "
		  . "interval '1 second')`. Latency in ms: median over rounds of each "
		  . "round's median and 95th percentile; rows: what each read returned "
		  . "in the middle of a run.";
		push @o, '';
		push @o, '| full median | full p95 | incremental median | incremental p95 | full / incremental | rows full | rows incremental | reads per run |';
		push @o, '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
		for my $s (@vi)
		{
			my $rf = $s->{reader}{full} || {};
			my $ri = $s->{reader}{incremental} || {};
			my $ratio = $rf->{median} && $ri->{median} ? $rf->{median} / $ri->{median} : undef;
			push @o, '| ' . join(' | ',
				fmt_num($rf->{median}, 2), fmt_num($rf->{p95}, 2),
				fmt_num($ri->{median}, 2), fmt_num($ri->{p95}, 2),
				fmt_ratio($ratio), fmt_num($s->{full_rows}),
				fmt_num($s->{incremental_rows}),
				fmt_num(($rf->{n} // 0) + ($ri->{n} // 0))) . ' |';
		}
	}

	# pgss_ng_info: whatever columns exist
	my @ng = grep { $_->{variant} eq 'pgss_ng' && $_->{info} && %{ $_->{info} } } @$rows;
	if (@ng)
	{
		my %cols;
		$cols{$_} = 1 for map { keys %{ $_->{info} } } @ng;
		my @cols = sort { ($a eq 'dealloc' ? 0 : 1) <=> ($b eq 'dealloc' ? 0 : 1) || $a cmp $b } keys %cols;
		push @o, '';
		push @o, '### pgss_ng_info at the end of each run (median over rounds)';
		push @o, '';
		push @o, '| workload | clients | ' . join(' | ', @cols) . ' |';
		push @o, '| --- | ---: |' . (' ---: |' x @cols);
		for my $s (@ng)
		{
			push @o, "| $s->{workload} | $s->{clients} | "
			  . join(' | ', map { fmt_num($s->{info}{$_}) } @cols) . ' |';
		}
	}

	# targets
	push @o, '';
	push @o, '### Targets (measured, not asserted)';
	push @o, '';
	my @ngr = grep { $_->{variant} eq 'pgss_ng' } @$rows;
	my (@short1, $n1, @short2, $n2, @short3, $n3);
	# TPS targets against the untracked server, per workload (issue 11)
	my %tgt = (select_only => 0.97, tpcb => 0.97, trickle => 0.97,
		hotcold_churn => 0.95, cold_only => 0.85);
	for my $s (@ngr)
	{
		my $id = "$s->{workload} c=$s->{clients}";
		if (defined $s->{vs_none})
		{
			$n1++;
			my $t = $tgt{ $s->{workload} } // 0.97;
			push @short1, "$id " . fmt_ratio($s->{vs_none}) . " (target $t)"
			  if $s->{vs_none} < $t;
		}
		if (defined $s->{vs_pgss})
		{
			$n2++;
			push @short2, "$id " . fmt_ratio($s->{vs_pgss}) if $s->{vs_pgss} < 1.0;
		}
		if (defined $s->{hot_kept_min})
		{
			$n3++;
			push @short3, "$id " . fmt_pct($s->{hot_kept_min})
			  if $s->{hot_kept_min} < 1;
		}
	}
	my $line = sub {
		my ($what, $n, @short) = @_;
		return "- $what: not measured" unless $n;
		return "- $what: **met** ($n of $n)" unless @short;
		return "- $what: **short** in " . scalar(@short) . " of $n: " . join(', ', @short);
	};
	push @o, $line->('pgss_ng ≥ its target of untracked TPS (0.97x select_only, '
		  . 'tpcb, trickle; 0.95x hotcold_churn; 0.85x cold_only)', $n1, @short1);
	push @o, $line->('pgss_ng ≥ pg_stat_statements TPS', $n2, @short2);
	push @o, $line->('pgss_ng keeps 100% of the hot shapes', $n3, @short3);
	my $ngv = $vrb{pgss_ng};
	my $pv = $vrb{pgss};
	if ($ngv && $pv && $ngv->{reader} && $pv->{reader})
	{
		my @parts;
		my $all = 1;
		for my $k (qw(view fn))
		{
			my $a = $ngv->{reader}{$k} && $ngv->{reader}{$k}{median};
			my $b = $pv->{reader}{$k} && $pv->{reader}{$k}{median};
			next unless $a && $b;
			my $r = $a / $b;
			$all = 0 if $r > 0.8;
			push @parts, sprintf('%s %.2fx', $k eq 'view' ? 'view' : 'fn(false)', $r);
		}
		push @o, "- view_read latency ≤ 0.8x pg_stat_statements: "
		  . ($all ? '**met**' : '**short**') . ' (' . join(', ', @parts) . ')';
	}
	else
	{
		push @o, "- view_read latency ≤ 0.8x pg_stat_statements: not measured";
	}
	my ($vi) = grep { $_->{workload} eq 'view_read_incremental' && $_->{reader}
		  && $_->{reader}{full} && $_->{reader}{incremental} } @$rows;
	if ($vi && $vi->{reader}{full}{median} && $vi->{reader}{incremental}{median})
	{
		my $r = $vi->{reader}{full}{median} / $vi->{reader}{incremental}{median};
		push @o, sprintf("- view_read_incremental ≥ 10x faster than the full read: %s (%.2fx)",
			$r >= 10 ? '**met**' : '**short**', $r);
	}
	else
	{
		push @o, "- view_read_incremental ≥ 10x faster than the full read: not measured";
	}
	if ($m->{mode} ne 'full')
	{
		push @o, '';
		push @o, "Quick, scale and smoke runs are short: their numbers show the "
		  . "order of magnitude, not differences of a few percent. Use `--full` "
		  . "for those.";
	}
	if ($png)
	{
		push @o, '';
		push @o, "![TPS by variant and workload]($png)";
	}
	return join("\n", @o) . "\n";
}

sub make_chart
{
	my ($rows, $pngpath, $title) = @_;
	my $gp = `sh -c 'command -v gnuplot' 2>/dev/null`;
	chomp $gp;
	unless ($gp)
	{
		print "gnuplot not found: no chart (apt-get install -y gnuplot-nox)\n";
		return 0;
	}
	my (%by, @labels);
	for my $s (@$rows)
	{
		my $l = "$s->{workload} c$s->{clients}";
		push @labels, $l unless $by{$l};
		$by{$l}{ $s->{variant} } = $s;
	}
	my $tmp = tempdir('pgss_ng_chart.XXXXXX', DIR => '/tmp', CLEANUP => 1);
	my $dat = "$tmp/tps.dat";
	my $txt = "# label none pgss pgss_ng pgss/none ng/none\n";
	for my $l (@labels)
	{
		my @v = map { $by{$l}{$_} && defined $by{$l}{$_}{tps} ? sprintf('%.1f', $by{$l}{$_}{tps}) : 'NaN' } @VARIANTS;
		my @r = map { $by{$l}{$_} && defined $by{$l}{$_}{vs_none} ? sprintf('%.3f', $by{$l}{$_}{vs_none}) : 'NaN' } qw(pgss pgss_ng);
		$txt .= "\"$l\" @v @r\n";
	}
	spew($dat, $txt);
	# the ratio panel: only the workloads with an untracked run
	my $txt2 = join("\n", grep { !/ NaN NaN NaN NaN NaN$/ && !/^"[^"]*" NaN / } split /\n/, $txt) . "\n";
	spew("$tmp/ratio.dat", $txt2);
	my $dat2 = "$tmp/ratio.dat";
	my $n = @labels;
	my $ymax = 1.25;
	for my $s (@$rows)
	{
		$ymax = $s->{vs_none} * 1.12 if defined $s->{vs_none} && $s->{vs_none} * 1.12 > $ymax;
	}
	$ymax = sprintf('%.2f', $ymax);
	my $width = 300 + 110 * $n;
	$width = 900 if $width < 900;
	my $gps = <<GP;
set terminal pngcairo noenhanced size $width,900 font "sans,10"
set output '$pngpath'
set datafile missing 'NaN'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside top center horizontal
set grid ytics
set xtics rotate by -20 nomirror
set multiplot layout 2,1 title "$title"
set title "TPS (median of rounds)"
set yrange [0:*]
set format y "%.0f"
plot '$dat' using 2:xtic(1) title 'untracked' lc rgb '#888888', \\
     '' using 3 title 'pg_stat_statements' lc rgb '#d95f02', \\
     '' using 4 title 'pgss_ng' lc rgb '#1b9e77'
set title "TPS relative to untracked (pgss_ng targets: 0.97, churn 0.95, cold_only 0.85)"
set yrange [0:$ymax]
set format y "%.2f"
set arrow 1 from graph 0, first 0.97 to graph 1, first 0.97 nohead lc rgb '#cc0000' dt 2
plot '$dat2' using 5:xtic(1) title 'pg_stat_statements' lc rgb '#d95f02', \\
     '' using 6 title 'pgss_ng' lc rgb '#1b9e77', \\
     '' using (\$0 - 1.0/6):(\$5):(sprintf('%.2f', \$5)) with labels offset 0,0.7 font ",8" notitle, \\
     '' using (\$0 + 1.0/6):(\$6):(sprintf('%.2f', \$6)) with labels offset 0,0.7 font ",8" notitle
unset multiplot
GP
	spew("$tmp/chart.gp", $gps);
	my $rc = system("gnuplot '$tmp/chart.gp' >'$tmp/gnuplot.log' 2>&1");
	if ($rc != 0 || !-s $pngpath)
	{
		print STDERR "gnuplot failed:\n" . slurp("$tmp/gnuplot.log");
		return 0;
	}
	return 1;
}

sub report
{
	my ($data) = @_;
	my $m = $data->{meta};
	my $out = $opt{'out-dir'};
	make_path($out);
	my $name = $opt{name} // "$m->{stamp}-$m->{mode}";
	my $rows = summarize($data);
	spew("$out/$name.json", JSON::PP->new->canonical->pretty->encode($data));
	my $png = "$name.png";
	my $title = "pgss_ng benchmark, $m->{mode} mode, $m->{date}, commit $m->{commit}";
	my $have_png = make_chart($rows, "$out/$png", $title);
	my $md = "# pgss_ng benchmark: $m->{mode} mode, $m->{date}\n\n"
	  . report_body($data, $rows, $have_png ? $png : undef)
	  . "\nRaw data: [$name.json]($name.json). Reproduce: `bash bench/run.sh --$m->{mode}` "
	  . "(see docs/performance.md).\n";
	spew("$out/$name.md", $md);
	print "report: $out/$name.md\n";
	print "chart:  $out/$png\n" if $have_png;
	if ($opt{'update-docs'})
	{
		update_docs($data, $rows, $have_png ? "$out/$png" : undef, "$out/$name.md");
	}
	print "\n$md" unless $m->{mode} eq 'smoke';
	my $errors = grep { $_->{error} } @{ $data->{runs} };
	return $errors ? 1 : 0;
}

# Replace the part of docs/performance.md between the result markers.
sub update_docs
{
	my ($data, $rows, $png, $mdpath) = @_;
	my $doc = "$opt{repo}/docs/performance.md";
	die "no $doc\n" unless -f $doc;
	my $docdir = dirname(abs_path($doc));
	my $rel = sub {
		my ($p) = @_;
		my $a = abs_path($p);
		my $r = File::Spec->abs2rel($a, $docdir);
		return $r;
	};
	my $body = "Latest run: [" . basename($mdpath) . "](" . $rel->($mdpath) . ")\n\n"
	  . report_body($data, $rows, $png ? $rel->($png) : undef);
	my $text = slurp($doc);
	my $b = '<!-- results:begin -->';
	my $e = '<!-- results:end -->';
	$text =~ s/\Q$b\E.*?\Q$e\E/$b\n$body$e/s
	  or die "markers $b / $e not found in $doc\n";
	spew($doc, $text);
	print "updated $doc\n";
}
