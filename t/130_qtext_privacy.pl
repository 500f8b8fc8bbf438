# Privacy of the text arena: what a role observes about its own entries
# must not depend on the texts of other roles (issue 14, item 1).
#
# query_text_memory = 256kB.  alice (unprivileged) runs
# SET app.api_key = 'k-7731' 50 times.  bob (unprivileged) then fills the
# arena to the brim while eviction cannot make room: his session A, driven
# by gdb, is stopped inside its first eviction for room (at candidate_cmp,
# in the sort that pgss_ng_kind_evict runs holding pgss_ng_dealloc), and
# every other backend, finding that lock taken, skips eviction.  bob's
# other session stores 200 texts of about 2 kB, then one each of every
# padding length from 1024 bytes down to 0: afterwards no text as long as
# a guess fits.  For each guess g (the right one among four wrong ones of
# the same length) bob runs SET app.api_key = 'g' and looks at his own
# entry: it exists with calls = 1 and without text (query NULL), for every
# guess alike.  Without the fix of issue 14 item 1 the right guess alone
# showed its text, because an identical text already stored was shared
# before the size cap was checked; now the cap applies to each entry's
# full text, shared or not, before the lookup.  Once A goes on, eviction
# makes room again: bob's next statement gets its text, and alice's entry
# (the most used) is kept.  The views are read with pgss_ng.track = none,
# so reading records nothing.
#
# Needs gdb and permission to ptrace a backend: the whole file is skipped
# otherwise.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('qtext_privacy');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pgss_ng'
pgss_ng.max = 5000
pgss_ng.query_text_memory = 256kB
pgss_ng.track = top
pgss_ng.track_utility = on
pgss_ng.track_planning = off
pgss_ng.save = off
autovacuum = off
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT SET ON PARAMETER pgss_ng.track TO alice, bob;
});

# Run SQL as a role; quietly (untracked) unless $tracked.
sub as_role
{
	my ($role, $sql, $tracked) = @_;
	local $ENV{PGOPTIONS} = $tracked ? '' : '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql, extra_params => [ '-U', $role ]);
}

# bob's session A, to be stopped by gdb inside its first eviction for
# room.  gdb attaches now: the file is skipped if it cannot.
my $sess_a = $node->background_psql('postgres',
	extra_params => [ '-U', 'bob' ]);
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
my %gdb = (in => '', out => '', err => '');
my $gdb_timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
if (!eval {
		$gdb{h} = IPC::Run::start([ 'gdb', '-q', '-nx', '-p', $apid ],
			'<', \$gdb{in}, '>', \$gdb{out}, '2>', \$gdb{err}, $gdb_timer);
		1;
	})
{
	$sess_a->quit;
	$node->stop;
	plan skip_all => 'gdb is not installed';
}

# If the test dies while A is stopped, let it go (gdb's death detaches
# it), or the node cannot stop.
END
{
	$gdb{h}->kill_kill if $gdb{h} && $gdb{h}->pumpable;
}

# Send gdb commands; wait until its output matches $re (undef: timeout).
sub gdb_do
{
	my ($re, @cmds) = @_;
	$gdb{in} .= join('', map { "$_\n" } @cmds);
	$gdb_timer->start($PostgreSQL::Test::Utils::timeout_default);
	my $ok = pump_until($gdb{h}, $gdb_timer, \$gdb{out}, $re);
	my $out = $gdb{out};
	$gdb{out} = '';
	return $ok ? $out : undef;
}

my $attached = gdb_do(qr/\@\@ready\@\@/,
	'set pagination off', 'set confirm off', 'set width 0',
	'set debuginfod enabled off',
	'handle SIGHUP SIGUSR1 SIGUSR2 SIGURG SIGALRM SIGPIPE nostop noprint pass',
	'info address candidate_cmp', 'echo @@ready@@\n');
if (!defined $attached || $attached !~ /Symbol "candidate_cmp" is/)
{
	my ($why) = grep { /\S/ } split /\n/, $gdb{err};
	$gdb{h}->kill_kill;
	$sess_a->quit;
	$node->stop;
	plan skip_all => 'gdb cannot attach to a backend: ' . ($why // 'no output');
}
my $secret = 'k-7731';
as_role('alice', "SET app.api_key = '$secret';\n" x 50, 1);
is( as_role(
		'alice',
		q{SELECT count(*) FROM pgss_ng WHERE query = 'SET app.api_key = ''k-7731'''}),
	'1',
	'alice: her statement has its text');

ok(defined gdb_do(qr/Continuing\./, 'break candidate_cmp', 'continue'),
	'gdb: breakpoint on candidate_cmp in A');

# A stores texts of 2 kB until the arena needs room: its eviction stops.
# (psql reads them from a file: a large write to its stdin would block.)
my $fill_a = "$PostgreSQL::Test::Utils::tmp_check/fill_a.sql";
open(my $fh, '>', $fill_a) or die "$fill_a: $!";
printf $fh "SET app.a%05d = '%s';\n", $_, 'x' x 2048 for 1 .. 200;
close($fh);
$sess_a->{stdin} .= "\\i $fill_a\n\\echo '\@\@A done\@\@'\n";
$sess_a->{run}->pump_nb;
ok( defined gdb_do(
		qr/Breakpoint \d+(?:\.\d+)?, (?:0x[0-9a-f]+ in )?candidate_cmp \(/),
	'A is stopped in its eviction for room, holding pgss_ng_dealloc');

# bob fills the arena to the brim: 200 texts of 2 kB, then every padding
# length from 1024 down to 0 once (each stored if it still fits).
my $sql = '';
$sql .= sprintf("SET app.p%05d = '%s';\n", $_, 'x' x 2048) for 1 .. 200;
my $n = 200;
for my $pad (reverse 0 .. 1024)
{
	$n++;
	$sql .= sprintf("SET app.p%05d = '%s';\n", $n, 'y' x $pad);
}
as_role('bob', $sql, 1);

is( $node->safe_psql(
		'postgres',
		q{SELECT dealloc = 0 AND qtext_bytes <= qtext_limit_bytes
				 AND qtext_dropped > 0
		  FROM pgss_ng_info}),
	't',
	'arena full, nothing evicted, qtext_bytes <= the cap, texts dropped');

my @guesses = ('k-1234', 'k-7731', 'k-0000', 'k-9999', 'k-7730');
my %outcome;
for my $g (@guesses)
{
	as_role('bob', "SET app.api_key = '$g';", 1);
	# bob's newest entry is the one of this guess (reads are untracked).
	$outcome{$g} = as_role(
		'bob', q{
		SELECT calls || ' ' || coalesce(query, 'NULL') FROM pgss_ng
		WHERE userid = 'bob'::regrole::oid
		ORDER BY stats_since DESC LIMIT 1});
}

for my $g (@guesses)
{
	is($outcome{$g}, '1 NULL',
		"guess $g: bob's entry exists, counted once, without text");
}
is(scalar(keys %{ { map { $outcome{$_} =~ s/\Q$_\E/G/r => 1 } @guesses } }),
	1, 'the right guess and the wrong ones look the same to bob');

# A goes on: eviction makes room again.
ok(defined gdb_do(qr/\@\@gone\@\@/, 'delete', 'detach', 'echo @@gone@@\n'),
	'gdb: A released');
$gdb{in} .= "quit\n";
$gdb{h}->finish;
$sess_a->{timeout}->start;
ok( pump_until(
		$sess_a->{run}, $sess_a->{timeout},
		\$sess_a->{stdout}, qr/\@\@A done\@\@/),
	"A's statements finished");
$sess_a->quit;
as_role('bob', "SET app.after = 'room again';", 1);
is( as_role(
		'bob',
		q{SELECT count(*) FROM pgss_ng
		  WHERE query = 'SET app.after = ''room again'''}),
	'1',
	'after eviction made room, bob\'s new statement has its text');
is( $node->safe_psql(
		'postgres',
		q{SELECT dealloc > 0 AND qtext_bytes <= qtext_limit_bytes
		  FROM pgss_ng_info}),
	't',
	'entries were evicted for room, qtext_bytes <= the cap');

# alice's own entry is unaffected.
is( as_role(
		'alice',
		q{SELECT calls FROM pgss_ng WHERE query = 'SET app.api_key = ''k-7731'''}),
	'50',
	'alice still sees her text, calls = 50');

$node->stop;
done_testing();
