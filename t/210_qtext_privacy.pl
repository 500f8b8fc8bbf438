# Privacy of the text arena: what a role observes about its own entries
# must not depend on the texts of other roles (issue 14, item 1).
#
# The secret is a relation name, k_7731: alice runs CREATE TEMP TABLE IF
# NOT EXISTS k_7731 (a int) 50 times.  A relation name stays in the
# normalized text and changes the queryid on every version (15 hashes a
# utility statement's text, 16 and later jumble the name), so each of
# bob's guesses is an entry of its own, whose text equals alice's exactly
# when the guess is right.  (The issue's reproduction put the secret in a
# SET value; 18 normalizes those to $1, so that shape no longer leaks
# there, while this one leaks on every version without the fix.)
#
# query_text_memory = 256kB.  bob (unprivileged) fills the arena to the
# brim while eviction cannot make room: his session A, driven by gdb, is
# stopped inside its first eviction for room (at candidate_cmp, in the
# sort that pgss_ng_kind_run_eviction runs holding pgss_ng_dealloc), and every
# other backend, finding that lock taken, skips eviction.  bob's other
# session stores 200 texts of about 2 kB, then one each of every padding
# length from 1024 bytes down to none: afterwards no text as long as a
# guess fits.  The fill statements select distinct pairs of columns of a
# wide table (distinct queryids, no constants, so the same text on every
# version) and carry their padding in a comment, which stays in the
# normalized text.  For each guess g (the right one among four wrong ones
# of the same length) bob runs CREATE TEMP TABLE IF NOT EXISTS g (a int)
# and looks at his own entry: it exists with calls = 1 and without text
# (query NULL), for every guess alike.  Without the fix of issue 14 item 1
# the right guess alone showed its text, because an identical text already
# stored was shared before the size cap was checked; now the cap applies
# to each entry's full text, shared or not, before the lookup.  Once A
# goes on, eviction makes room again: bob's next statement gets its text,
# and alice's entry (the most used) is kept.  The views are read with
# pgss_ng.track = none, so reading records nothing.
#
# Needs gdb and permission to ptrace a backend (scripts/test.sh lowers
# kernel.yama.ptrace_scope for its run; gdb runs as the server's user):
# otherwise the whole file is skipped, saying why, which scripts/test.sh
# counts as skipped, not passed, and which fails a CI run.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use PgssNgTest;

my $node =
  start_small_arena_node('qtext_privacy', autovacuum => 'off');
setup_alice_bob($node, 60);

# fill_stmt($k, $pad, $ch): the $k-th distinct ordered pair of columns of
# w (3540 of them), padded by a comment holding $pad times $ch, or by
# none if $pad is undef.
my @pairs;
for my $i (1 .. 60)
{
	push @pairs, map { [ $i, $_ ] } grep { $_ != $i } 1 .. 60;
}

sub fill_stmt
{
	my ($k, $pad, $ch) = @_;
	my ($i, $j) = @{ $pairs[$k] };
	return "SELECT c$i, c$j FROM w"
	  . (defined $pad ? ' /*' . ($ch x $pad) . '*/' : '');
}

# The statement of the secret, or of a guess.
sub guess_stmt
{
	return "CREATE TEMP TABLE IF NOT EXISTS $_[0] (a int)";
}

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
my $secret = guess_stmt('k_7731');
as_role('alice', "SET client_min_messages = warning;\n" . "$secret;\n" x 50, 1);
is(as_role('alice', qq{SELECT calls FROM pgss_ng WHERE query = '$secret'}),
	'50', 'alice: her statement has its text');

ok(defined gdb_do(qr/Continuing\./, 'break candidate_cmp', 'continue'),
	'gdb: breakpoint on candidate_cmp in A');

# A stores texts of 2 kB until the arena needs room: its eviction stops.
# (psql reads them from a file: a large write to its stdin would block.)
my $fill_a = "$PostgreSQL::Test::Utils::tmp_check/fill_a.sql";
open(my $fh, '>', $fill_a) or die "$fill_a: $!";
print $fh fill_stmt($_, 2048, 'x') . ";\n" for 0 .. 199;
close($fh);
$sess_a->{stdin} .= "\\i $fill_a\n\\echo '\@\@A done\@\@'\n";
$sess_a->{run}->pump_nb;
ok( defined gdb_do(
		qr/Breakpoint \d+(?:\.\d+)?, (?:0x[0-9a-f]+ in )?candidate_cmp \(/),
	'A is stopped in its eviction for room, holding pgss_ng_dealloc');

# bob fills the arena to the brim: 200 texts of 2 kB, then every padding
# length from 1024 down to none once (each stored if it still fits).
my $sql = '';
$sql .= fill_stmt($_, 2048, 'x') . ";\n" for 200 .. 399;
my $n = 400;
$sql .= fill_stmt($n++, $_, 'y') . ";\n" for reverse 0 .. 1024;
$sql .= fill_stmt($n++, undef) . ";\n";
as_role('bob', $sql, 1);

is( $node->safe_psql(
		'postgres',
		q{SELECT dealloc = 0 AND qtext_bytes <= qtext_limit_bytes
				 AND qtext_dropped > 0
		  FROM pgss_ng_info}),
	't',
	'arena full, nothing evicted, qtext_bytes <= the cap, texts dropped');

my @guesses = ('k_1234', 'k_7731', 'k_0000', 'k_9999', 'k_7730');
my %outcome;
for my $g (@guesses)
{
	as_role('bob', guess_stmt($g) . ';', 1);
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
as_role('bob', 'SELECT c1 FROM w /* room again */;', 1);
is( as_role(
		'bob',
		q{SELECT count(*) FROM pgss_ng
		  WHERE query = 'SELECT c1 FROM w /* room again */'}),
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
		qq{SELECT calls FROM pgss_ng WHERE query = '$secret'}),
	'50',
	'alice still sees her text, calls = 50');

$node->stop;
done_testing();
