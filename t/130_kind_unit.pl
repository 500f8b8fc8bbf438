# Unit test of the kind layer (src/kind/kind_*.c, src/kind/kind.h) with a fake kind,
# which shows that the layer is generic: t/unit/kind_unit.c (an int64 key and a
# counter) is built with the layer's objects and nothing else of pgss_ng
# into a library of its own (t/unit/kind_unit.mk, PGXS, out of tree in a
# temporary directory: never installed), which a node preloads by its
# path, without pgss_ng.  The SQL functions of t/unit/kind_unit.sql call the
# layer's API one function each, and the fake kind counts in shared memory
# what the layer asked of it (inits, frees, the chunks of the kind's area
# its entries own).  Checked:
#
# - create: a new key is created, the same key exists (no init called); a
#   creation that loses the race for its key (its init callback publishes
#   the same key first) returns "exists" and the loser's body is given back
#   through the free callback; an init callback that raises an ERROR: the
#   guard logs it, the body is given back, nothing is published.
# - pending and flush: counts are invisible until flushed, then merged
#   exactly, from two sessions, and at a session's exit; a session holds at
#   most max_pending pending entries (the next new one flushes them).
# - eviction with a small max (kind_unit.max: one shared value, as its
#   last setting in any session left it): the least used entries go,
#   the counted ones and one a session holds a reference to stay; after
#   max is lowered, exactly the most used stay.  Asserted through the
#   public API only (which keys exist, the counters), not how
#   victims are found.
# - the backstop (2 x max allocated bodies): with bodies removed but still
#   referenced, creations succeed up to it and are refused exactly at it,
#   each refusal counted; the bodies are freed by the flush of the
#   references, and creation works again.
# - removal: a body outlives its removal while referenced (intact, not
#   freed, counted as allocated) and is freed by its last release; removal
#   and update of matching keys; the event counters reset and restored.
# - at the end nothing is left: every body was freed once, every owned
#   chunk given back, and the server log has no ERROR, WARNING or failed
#   assertion (the layer and the fake kind are built with Assert()s).
use strict;
use warnings;

use Cwd qw(getcwd);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

# ---------------------------------------------------------------- build
my $src = getcwd();
my $build = PostgreSQL::Test::Utils::tempdir('kind_unit');
my ($out, $err);
{
	# not the outer make's (check-tap's) flags and jobserver
	local %ENV = %ENV;
	delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL)};
	($out, $err) = run_command(
		[
			'make', '-s', '-C', $build, '-f', "$src/t/unit/kind_unit.mk",
			'PG_CONFIG=pg_config'
		]);
}
my $lib = "$build/kind_unit.so";
if (!ok(-f $lib,
		'kind_unit.so built with PGXS from t/unit/kind_unit.c and src/kind/kind_*.c'))
{
	# this file only: the other TAP files go on
	diag("kind_unit build failed:\n$out\n$err");
	done_testing();
	exit;
}
is($out . $err, '', 'the build printed nothing (no warning)');

# ------------------------------------------------------------ the node
my $node = pgss_node(
	'kind_unit',
	shared_preload_libraries => $lib,
	'kind_unit.max' => 1000);
is($node->safe_psql('postgres', 'SHOW kind_unit.max'),
	'1000', 'the library is preloaded (its GUC is defined)');

my $sql = slurp_file("$src/t/unit/kind_unit.sql");
$sql =~ s/MODULE_PATHNAME/$lib/g;
$node->safe_psql('postgres', $sql);

sub sq
{
	return $node->safe_psql('postgres', shift);
}

# the layer's counters and the fake kind's, as a hash
my @counter_names =
  qw(entries entries_allocated dealloc entries_evicted backstop_skips inits frees owned discarded);

sub counters
{
	my %c;
	@c{@counter_names} = split /\|/,
	  sq('SELECT ' . join(', ', @counter_names) . ' FROM kind_unit_counters()');
	return \%c;
}

# counters_are(\%want, $name): the named counters have these values; inits
# and frees are counted from the last call with $since (a counters() hash)
sub counters_are
{
	my ($want, $since, $name) = @_;
	my $c = counters();
	my %got;
	for my $k (keys %$want)
	{
		$got{$k} = $c->{$k};
		$got{$k} -= $since->{$k} if $since && ($k eq 'inits' || $k eq 'frees');
	}
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is_deeply(\%got, $want, $name);
	return;
}

# the keys lo .. hi that have no live entry, comma-separated
sub gone
{
	my ($lo, $hi) = @_;
	return sq(
		"SELECT string_agg(k::text, ',' ORDER BY k) FROM generate_series($lo, $hi) k
		 WHERE NOT kind_unit_exists(k)");
}

# ------------------------------------------------------------- create
my $c0 = counters();
is(sq('SELECT kind_unit_create(1, 10)'), 'created', 'create: a new key is created');
is(sq('SELECT kind_unit_create(1, 11)'), 'exists', 'create: the same key again exists');
is(sq('SELECT kind_unit_exists(1), kind_unit_exists(2)'),
	't|f', 'exists: true for the created key, false for another');
is(sq('SELECT key, tag, count, flushes FROM kind_unit_entries()'),
	'1|10|0|0', 'the entry holds what the first init stored, nothing counted');
counters_are(
	{ entries => 1, entries_allocated => 1, inits => 1, frees => 0, owned => 1 },
	$c0, 'one entry, one body, one init (not for the second creation)');

is(sq('SELECT kind_unit_race(2, 20)'),
	'exists/created',
	'lost race: the creation whose key was published first returns exists');
is(sq('SELECT tag FROM kind_unit_entries() WHERE key = 2'),
	'1020', "the winner's data is the entry's");
counters_are(
	{ entries => 2, entries_allocated => 2, inits => 3, frees => 1, owned => 2 },
	$c0,
	"the loser's body is given back: freed through the free callback, its owned chunk too"
);

my $log_offset = -s $node->logfile;
is(sq('SELECT kind_unit_create_failing(3)'),
	'error',
	'an init callback raising an ERROR: the guard returns false, no ERROR reaches the statement'
);
ok( $node->log_contains(
		qr/LOG:  kind_unit could not create an entry: kind_unit init callback failed on purpose/,
		$log_offset),
	'the guard logged the ERROR at LOG, with the kind and what failed');
is(sq('SELECT kind_unit_exists(3)'), 'f', 'the failed entry was not published');
counters_are(
	{ entries => 2, entries_allocated => 2, inits => 4, frees => 2, owned => 2 },
	$c0, 'its body was given back through the free callback');
is(sq('SELECT kind_unit_create(3, 30)'),
	'created', 'the key is created afterwards (no lock was left held)');

# --------------------------------------------------- pending and flush
my $s1 = $node->background_psql('postgres');
my $s2 = $node->background_psql('postgres');
is( $s1->query_safe(
		'SELECT bool_and(kind_unit_count(1, 1)) FROM generate_series(1, 1000)'),
	't',
	'count: 1000 pending counts into key 1 (session 1)');
is($s2->query_safe('SELECT kind_unit_read(1)'),
	'0', 'pending counts are not in the shared entry before their flush');
is($s2->query_safe('SELECT kind_unit_count(1, 200)'),
	't', 'count: 200 pending into key 1 (session 2)');
is($s1->query_safe('SELECT kind_unit_flush(false)'),
	'f', 'flush (session 1): nothing left pending');
is($s1->query_safe('SELECT kind_unit_read(1)'),
	'1000', 'the flush merged exactly its 1000 counts');
is($s2->query_safe('SELECT kind_unit_flush(true)'),
	'f', 'forced flush (session 2): nothing left pending');
is(sq('SELECT count, flushes FROM kind_unit_entries() WHERE key = 1'),
	'1200|2', 'the second flush added its 200: one flush per pending entry');

# at most max_pending (32) pending entries: the 33rd flushes those before
is( $s1->query_safe(
		'SELECT bool_and(kind_unit_count(k, 1)) FROM generate_series(101, 140) k'),
	't',
	'count into 40 new keys (session 1)');
is(sq('SELECT count(*), sum(count) FROM kind_unit_entries() WHERE key BETWEEN 101 AND 140'),
	'40|32',
	'the 33rd new pending entry flushed the 32 before it: pending stays bounded');
is($s1->query_safe('SELECT kind_unit_flush(false)'), 'f', 'flush the rest');
is(sq('SELECT sum(count) FROM kind_unit_entries() WHERE key BETWEEN 101 AND 140'),
	'40', 'all 40 counts merged');
$s1->quit;
$s2->quit;

# the owner's exit callback flushes
sq('SELECT kind_unit_count(1, 7), kind_unit_count(4, 5)');
wait_for_clients_gone($node, 'the session that exited with pending counts is gone');
is(sq('SELECT kind_unit_read(1), kind_unit_read(4)'),
	'1207|5', 'its pending counts were merged at its exit, into an old and a new entry');
counters_are({ discarded => 0 }, undef, 'nothing handed to the discard callback');

# ------------------------------------------------------------ eviction
is(sq('SELECT kind_unit_remove(NULL, NULL)'), '44', 'remove every entry');
sq('SELECT kind_unit_reset_counters()');
my $e = $node->background_psql('postgres');
$e->query_safe('SET kind_unit.max = 20');
is( $e->query_safe(
		"SELECT count(*) FROM generate_series(1, 20) k WHERE kind_unit_create(k, k) = 'created'"
	),
	'20',
	'max 20 (this session): 20 entries created, oldest first');
is( $e->query_safe(
		'SELECT bool_and(kind_unit_count(k, 5)) FROM generate_series(1, 10) k'),
	't',
	'the 10 oldest counted 5 times each');
is($e->query_safe('SELECT kind_unit_flush(true)'), 'f', 'and flushed');
is($e->query_safe('SELECT kind_unit_count(11, 1)'),
	't', 'key 11 (not counted yet) referenced by a pending count');
counters_are({ entries => 20, dealloc => 0, entries_evicted => 0 },
	undef, 'at max: nothing evicted');
is($e->query_safe('SELECT kind_unit_create(21, 21)'),
	'created', 'a 21st entry is created');
my $c = counters();
my $gone = gone(1, 21);
my $n = ($gone =~ tr/,//) + 1;
ok($gone ne '' && $c->{entries} <= 20 && $c->{entries} == 21 - $n,
	"past max, eviction brings the entries back to max or below ($c->{entries} left)");
is($gone, join(',', 12 .. 11 + $n),
	'the least used go, oldest first: neither a counted entry, nor the referenced one, nor the new one'
);
is($c->{entries_evicted}, $n, 'each evicted entry counted in entries_evicted');
is($c->{dealloc}, 1, 'the eviction run counted once in dealloc');
is($e->query_safe('SELECT kind_unit_flush(true)'), 'f', 'flush the reference to key 11');
is(sq('SELECT kind_unit_read(11)'), '1', "the referenced entry's count is merged");

$e->query_safe('SET kind_unit.max = 10');
$e->query_safe('SELECT kind_unit_evict()');
is(sq("SELECT string_agg(key::text, ',' ORDER BY key) FROM kind_unit_entries()"),
	join(',', 1 .. 10),
	'max lowered to 10: eviction keeps exactly the 10 most used');
counters_are(
	{ entries => 10, dealloc => 2, entries_evicted => 11 },
	undef,
	'evicted down to max: a second run in dealloc, every evicted entry in entries_evicted'
);
# max is one shared value (its last setting, from any session): back to
# the configured 1000 before the other sessions below
$e->query_safe('RESET kind_unit.max');
$e->quit;

# ---------------------------------------------- removal and the backstop
is(sq('SELECT kind_unit_remove(NULL, NULL)'), '10', 'remove every entry');
sq('SELECT kind_unit_reset_counters()');
my $c1 = counters();
my $b = $node->background_psql('postgres');
is( $b->query_safe(
		'SELECT bool_and(kind_unit_count(k, 1)) FROM generate_series(1001, 1015) k'),
	't',
	'15 entries created by pending counts: each referenced by this session');
is($b->query_safe('SELECT kind_unit_held_intact()'),
	'15', 'the 15 references point to their bodies');
is(sq('SELECT kind_unit_remove(NULL, NULL)'), '15',
	'remove them from another session');
counters_are(
	{ entries => 0, entries_allocated => 15, frees => 0, owned => 15 },
	$c1,
	'removed but referenced: no longer live, still allocated, not freed');
is(sq('SELECT kind_unit_exists(1001)'), 'f', 'a removed entry does not exist');
is($b->query_safe('SELECT kind_unit_exists(1001)'),
	'f', 'not even for the session holding its pending count');
is($b->query_safe('SELECT kind_unit_held_intact()'),
	'15', 'the removed bodies outlive their removal while referenced');

$b->query_safe('SET kind_unit.max = 8');
is($b->query_safe('SELECT kind_unit_create(2001, 1)'),
	'created',
	'max 8, backstop 16, 15 bodies allocated: a creation reaches the backstop');
is($b->query_safe('SELECT kind_unit_create(2002, 1)'),
	'full', 'at the backstop the next creation is refused');
is($b->query_safe('SELECT kind_unit_create(2003, 1)'), 'full', 'and the one after it');
counters_are(
	{ entries => 1, entries_allocated => 16, backstop_skips => 2 },
	$c1, 'allocated stops at the backstop; each refusal counted');
is(sq('SELECT kind_unit_exists(2002)'), 'f', 'a refused key has no entry');

is($b->query_safe('SELECT kind_unit_flush(false)'),
	'f', 'flush the pending counts into the removed entries');
counters_are(
	{
		entries => 1,
		entries_allocated => 1,
		frees => 15,
		owned => 1,
		discarded => 0
	},
	$c1,
	'the last release freed each removed body once; counts made before a removal are dropped, not discarded'
);
is(sq('SELECT kind_unit_read(1001)'), '', 'nothing was merged into a removed entry');
is($b->query_safe('SELECT kind_unit_create(2002, 1)'),
	'created', 'below the backstop again: the refused key is created');
$b->query_safe('RESET kind_unit.max');
$b->quit;

# ----------------------------------------------------------- counters
counters_are(
	{ entries => 2, backstop_skips => 2 },
	undef, 'before the reset of the counters');
sq('SELECT kind_unit_reset_counters()');
counters_are(
	{ entries => 2, dealloc => 0, entries_evicted => 0, backstop_skips => 0 },
	undef,
	'reset counters: dealloc, entries_evicted and backstop_skips restart, the entries stay'
);
sq('SELECT kind_unit_restore_counters(5, 6, 7)');
counters_are(
	{ dealloc => 5, entries_evicted => 6, backstop_skips => 7 },
	undef, 'restored counters are added');

# ------------------------------------- removal and update of matching keys
sq('SELECT kind_unit_remove(NULL, NULL)');
is(sq("SELECT count(*) FROM generate_series(1, 10) k WHERE kind_unit_create(k, k) = 'created'"),
	'10', '10 entries');
sq('SELECT bool_and(kind_unit_count(k, k)) FROM generate_series(1, 10) k');
wait_for_clients_gone($node, 'their counts are flushed');
is(sq('SELECT kind_unit_zero(4, 6)'), '3', 'update matching keys 4 .. 6');
is(sq("SELECT string_agg(count::text, ',' ORDER BY key) FROM kind_unit_entries()"),
	'1,2,3,0,0,0,7,8,9,10', 'exactly the matching entries were updated');
is(sq('SELECT kind_unit_remove(3, 5)'), '3', 'remove matching keys 3 .. 5');
is(gone(1, 10), '3,4,5', 'exactly the matching entries were removed');

# -------------------------------------------------------------- the end
sq('SELECT kind_unit_remove(NULL, NULL)');
$c = counters();
is_deeply(
	[ @$c{qw(entries entries_allocated owned)}, $c->{inits} - $c->{frees} ],
	[ 0, 0, 0, 0 ],
	"nothing left: every body freed once ($c->{frees} frees), every owned chunk given back"
);

$node->stop;
my @bad = grep { /\b(?:ERROR|WARNING|PANIC|FATAL):|TRAP:/ }
  split /\n/, slurp_file($node->logfile);
is(join("\n", @bad), '', 'no ERROR, WARNING or failed assertion in the server log');

done_testing();
