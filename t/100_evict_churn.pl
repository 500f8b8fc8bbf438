# Eviction under churn.
#
# With pgss_ng.max = 100, four concurrent psql clients run 100,000 distinct
# statements in total ("SELECT cI, cJ, cK FROM w" for distinct I < J < K,
# distinct by structure, not by constants), and after each one the next of
# 20 hot statements in round robin, so the hot statements' executions are
# known exactly by construction (1,250 per client, 5,000 each in total).
# Meanwhile another session samples pgss_ng_info about every 100 ms, and
# once more after the clients' last statement, to see the table full.  At the end, once every client backend has exited:
#   - no client saw an error;
#   - after one more statement end (which evicts if live entries are over
#     max), entries <= 100 and every dropped body was freed
#     (entries_allocated = entries);
#   - the 20 hot statements were never evicted: each is there once, with
#     calls and rows exactly equal to its executions;
#   - eviction ran (dealloc > 0, each run evicting at least one entry:
#     entries_evicted >= dealloc), and every entry made since the reset
#     was either evicted or is still there (entries_evicted + entries =
#     entries made);
#   - nothing counted was lost except the executions of statements whose
#     entry the backstop refused (dropped = backstop_skips).
# Churn alone keeps entries_allocated (live bodies plus removed ones not
# yet freed) far below the backstop max + min(max, 20000) = 200, so
# whether it is ever exceeded is checked where creations race at it,
# with nothing that could free a body meanwhile, so that any excess would
# last: 8 holders keep references to 180 bodies that a reset removed
# (7 x 25 and 5; track = all, counted in a DO block that then fails;
# taken under max = 1000, as at max 100 a backend's share of the
# backstop's headroom is a few references, max back at 100 before the
# reset), leaving room for exactly 20
# more; 8 clients, let go together (each waits for a shared advisory lock
# until all 8 do), run 50 new statements each (400, all top-level, no
# constants).  Live entries stay below max (no eviction), so afterwards:
# exactly 20 entries, entries_allocated exactly 200, the other 380
# refused (backstop_skips = dropped = 380), each of the 20 with 1 call.
# An admission that let two racing creators through at 199 would leave
# 201.  Once the holders flush, their bodies are freed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;
use IPC::Run;
use Time::HiRes qw(usleep);

my $nclients = 4;
my $ncold = 100_000;
my $nhot = 20;
my $max = 100;
my $backstop = $max + ($max < 20000 ? $max : 20000);

my $node = pgss_node(
	'churn',
	'pgss_ng.max' => $max,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off',
	max_connections => 30);

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 100);

# The hot statements: "SELECT count(*) FROM w WHERE cH = H", normalized to
# "... = $1", H = 1 .. 20.  Client scripts: cold statement number n of a
# client is followed by hot statement n mod 20 (so each client runs each
# hot statement ncold / nclients / nhot times).
my @hot_sql = map { "SELECT count(*) FROM w WHERE c$_ = $_;" } 1 .. $nhot;
my @hot_norm = map { "SELECT count(*) FROM w WHERE c$_ = \$1" } 1 .. $nhot;
my @hot_exec = (0) x $nhot;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my @files = map { "$tmp/client$_.sql" } 0 .. $nclients - 1;
my @fh;
my @ncold_of = (0) x $nclients;
for my $c (0 .. $nclients - 1)
{
	open($fh[$c], '>', $files[$c]) or die "cannot write $files[$c]: $!";
}
my $t = 0;
TRIPLES:
for my $i (1 .. 98)
{
	for my $j ($i + 1 .. 99)
	{
		for my $k ($j + 1 .. 100)
		{
			last TRIPLES if $t == $ncold;
			my $c = $t % $nclients;
			my $h = $ncold_of[$c]++ % $nhot;
			print { $fh[$c] } "SELECT c$i, c$j, c$k FROM w;\n$hot_sql[$h]\n";
			$hot_exec[$h]++;
			$t++;
		}
	}
}
close($_) or die "close: $!" for @fh;
is($t, $ncold, "$ncold distinct cold statements generated");

# The sampler: its own statements are not tracked, so they neither add
# entries nor evict.  Opened before the reset so that its SET is not an
# entry made after it.
my $sampler = $node->background_psql('postgres');
# It lives as long as the clients run, however long that takes on a busy
# machine: each query gets the full timeout, not what is left of the
# session's.
$sampler->set_query_timer_restart;
$sampler->query_safe('SET pgss_ng.track = none');

# Start from nothing: after this, the entries made are the reset
# statement's, the 20 hot ones, the cold ones the backstop let through,
# and the one of the poll that waits for the clients to exit.
$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');

my @conn = ('-h', $node->host, '-p', $node->port);
my (@h, @out, @err);
for my $c (0 .. $nclients - 1)
{
	($out[$c], $err[$c]) = ('', '');
	$h[$c] = IPC::Run::start(
		[
			$node->installed_command('psql'), '-X', '-q',
			'-v', 'ON_ERROR_STOP=1',
			'-o', '/dev/null',
			'-f', $files[$c],
			'-d', $node->connstr('postgres') . ' application_name=churn'
		],
		'<', \undef, '>', \$out[$c], '2>', \$err[$c],
		IPC::Run::timeout(900));
}

# Sample until every client is done.
my ($max_alloc, $max_live, $nsamples) = (0, 0, 0);
while (grep { $_->pumpable } @h)
{
	$_->pump_nb for grep { $_->pumpable } @h;
	my ($alloc, $live) = split /\|/,
	  $sampler->query_safe(
		'SELECT entries_allocated, entries FROM pgss_ng_info');
	$max_alloc = $alloc if $alloc > $max_alloc;
	$max_live = $live if $live > $max_live;
	$nsamples++;
	usleep(100_000);
}
# and once after the clients' last statement, however few samples the
# loop got in while they ran (the table stays full once it was)
{
	my ($alloc, $live) = split /\|/,
	  $sampler->query_safe(
		'SELECT entries_allocated, entries FROM pgss_ng_info');
	$max_alloc = $alloc if $alloc > $max_alloc;
	$max_live = $live if $live > $max_live;
}
$sampler->quit;

for my $c (0 .. $nclients - 1)
{
	$h[$c]->finish;
	is($h[$c]->result(0), 0, "client $c exited with status 0");
	unlike($err[$c], qr/ERROR|FATAL|PANIC/, "client $c saw no error")
	  or diag($err[$c]);
}

note("$nsamples samples: max entries_allocated $max_alloc, "
	  . "max entries $max_live");
ok($nsamples > 0, 'pgss_ng_info was sampled while the clients ran');
# Once the table is full, live entries stay between max - 5% and a little
# over max; a sample taken any time after that (the last one certainly)
# sees at least 95.
cmp_ok($max_alloc, '>=', $max - $max * 5 / 100,
	'the sampler saw a full table');

# Every client backend flushes at exit; wait until they are gone.
wait_for_clients_gone($node, 'all client backends have exited');

# Read everything in one statement, made before this statement's own entry.
my ($dealloc, $evicted, $entries, $alloc, $skips, $dropped) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT dealloc, entries_evicted, entries, entries_allocated,
			backstop_skips, dropped
	 FROM pgss_ng_info');
note("dealloc $dealloc, entries_evicted $evicted, entries $entries, "
	  . "entries_allocated $alloc, backstop_skips $skips, dropped $dropped");

cmp_ok($dealloc, '>', 0, 'eviction ran (dealloc > 0)');
cmp_ok($evicted, '>=', $dealloc,
	'each eviction run evicted entries (entries_evicted >= dealloc)');
# Made since the reset: the reset statement's entry, the hot ones, the
# cold ones minus those the backstop refused (a cold statement is tried
# once, at the end of its only execution), and the poll's.
is($evicted + $entries, 1 + $nhot + $ncold - $skips + 1,
	'entries_evicted + entries = entries made since the reset');
# Evicted entries are never ones some backend holds counts for, and no
# cold statement runs twice: the only executions not recorded are those
# whose entry the backstop refused.
is($dropped, $skips, 'dropped = backstop_skips: no counted execution lost');
is($alloc, $entries,
	'every dropped body was freed (entries_allocated = entries)');

# Eviction runs under a lock taken without waiting, so entries made while
# another backend was evicting may leave live entries a little over max
# when the clients stop; the next statement end of any backend evicts.
$node->safe_psql('postgres', 'SELECT 1');
my $final = $node->safe_psql('postgres', 'SELECT entries FROM pgss_ng_info');
cmp_ok($final, '<=', $max, "entries <= $max after the next statement end");

# The hot statements: each there once, never evicted, with exact counts.
my %got;
for my $row (
	split /\n/,
	$node->safe_psql(
		'postgres', q{
		SELECT query, count(*) OVER (PARTITION BY query), calls, rows
		FROM pgss_ng
		WHERE query LIKE 'SELECT count(*) FROM w WHERE c%' AND toplevel}))
{
	my ($q, $n, $calls, $rows) = split /\|/, $row;
	$got{$q} = "$n $calls $rows";
}
for my $h (0 .. $nhot - 1)
{
	my $n = $hot_exec[$h];
	is($got{ $hot_norm[$h] } // 'missing', "1 $n $n",
		"hot statement present once with calls = rows = $n: $hot_norm[$h]");
}

# --- creations racing at the backstop
{
	my @pairs;
	for my $i (1 .. 99)
	{
		push @pairs, [ $i, $_ ] for $i + 1 .. 100;
	}
	my $info = sub {
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		return $node->safe_psql('postgres',
			"SELECT $_[0] FROM pgss_ng_info");
	};
	$info->('pgss_ng_reset()');
	# The clients will start untracked and wait for a shared advisory lock
	# that this session holds; once all 8 wait, it lets them go together.
	# (Opened before the reset, which removes the entry of its SET.)
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SET pgss_ng.track = none');
	# at max 100 a holder could keep only its share of references
	$node->append_conf('postgresql.conf', "pgss_ng.max = 1000\n");
	$node->reload;
	ok( $node->poll_query_until(
			'postgres', 'SELECT entries_max FROM pgss_ng_info', '1000'),
		'race: max = 1000 for the holders');
	my @holders;
	my $p = 0;
	for my $h (0 .. 7)
	{
		my $n = $h < 7 ? 25 : 5;
		my $hold = "DO \$\$BEGIN\n"
		  . join('', map { "PERFORM c$_->[0], c$_->[1] FROM w;\n" }
			  @pairs[ $p .. $p + $n - 1 ])
		  . "RAISE EXCEPTION 'hold';\nEND\$\$;";
		$p += $n;
		my $b = $node->background_psql('postgres', on_error_stop => 0);
		$b->set_query_timer_restart;
		$b->query_safe("SET pgss_ng.track = 'all'");
		$b->query($hold);
		like($b->{stderr}, qr/ERROR:  hold/, "race: holder $h keeps $n references");
		$b->{stderr} = '';
		push @holders, $b;
	}
	$node->append_conf('postgresql.conf', "pgss_ng.max = 100\n");
	$node->reload;
	ok( $node->poll_query_until(
			'postgres', 'SELECT entries_max FROM pgss_ng_info', '100'),
		'race: max = 100 again');
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		$node->safe_psql('postgres', 'SELECT pgss_ng_reset()');
	}
	is($info->('entries, entries_allocated, backstop_skips, dropped'),
		'0|180|0|0', 'race: a reset leaves 180 referenced bodies, room for 20');

	$gate->query_safe('SELECT pg_advisory_lock(7)');
	my (@r, @rout, @rerr);
	for my $c (0 .. 7)
	{
		my $f = "$tmp/racer$c.sql";
		open(my $fh, '>', $f) or die "cannot write $f: $!";
		# set_config() in a SELECT that began untracked: not recorded
		print $fh "SELECT pg_advisory_lock_shared(7);\n"
		  . "SELECT set_config('pgss_ng.track', 'top', false);\n";
		print $fh "SELECT c$_->[0], c$_->[1] FROM w;\n"
		  for @pairs[ 1000 + 50 * $c .. 1000 + 50 * $c + 49 ];
		close($fh);
		($rout[$c], $rerr[$c]) = ('', '');
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		$r[$c] = IPC::Run::start(
			[
				$node->installed_command('psql'), '-X', '-q',
				'-v', 'ON_ERROR_STOP=1', '-o', '/dev/null', '-f', $f,
				'-d', $node->connstr('postgres') . ' application_name=racer'
			],
			'<', \undef, '>', \$rout[$c], '2>', \$rerr[$c],
			IPC::Run::timeout(900));
	}
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		ok( $node->poll_query_until(
				'postgres', q{SELECT count(*) FROM pg_stat_activity
							  WHERE application_name = 'racer'
								AND wait_event_type = 'Lock'}, '8'),
			'race: the 8 clients wait at the gate');
	}
	$gate->query_safe('SELECT pg_advisory_unlock(7)');
	for my $c (0 .. 7)
	{
		$r[$c]->finish;
		is($r[$c]->result(0) . " $rerr[$c]", '0 ', "race: client $c ran its 50");
	}
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		ok( $node->poll_query_until(
				'postgres', q{SELECT count(*) FROM pg_stat_activity
							  WHERE application_name = 'racer'}, '0'),
			'race: the clients have exited');
	}
	is($info->('entries, entries_allocated, backstop_skips, dropped'),
		'20|200|380|380',
		'race: exactly 20 admitted, never past the backstop, 380 refused');
	{
		local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
		is( $node->safe_psql(
				'postgres', q{SELECT count(*), sum(calls) FROM pgss_ng
							  WHERE query LIKE 'SELECT c%, c% FROM w'}),
			'20|20', 'race: the 20 admitted statements, 1 call each');
	}
	$gate->quit;
	for my $b (@holders)
	{
		$b->query_safe('SELECT 1');
		$b->quit;
	}
	wait_for_clients_gone($node, 'race: the holders have exited');
	is($info->('entries = entries_allocated'), 't',
		'race: the holders\' bodies freed once they flushed');
}

$node->stop;
done_testing();
