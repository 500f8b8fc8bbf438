# The named LWLocks of pgss_ng show up as wait events, and creation waits
# for none of them.
#
# For each of pgss_ng_qtext and pgss_ng_dealloc, backend A is stopped by
# gdb at a breakpoint inside the region where it holds that lock; backend
# B then does something that needs the lock; a third session polls
# pg_stat_activity until B shows wait_event_type 'LWLock' and wait_event
# '<name>'.  Then A is let go, and both must finish without error.  The
# breakpoints (the backtrace at each stop is checked):
#   pgss_ng_qtext   dshash_release_lock, first called inside
#                   pgss_ng_qtext_store() (set once A stopped at
#                   pgss_ng_qtext_store) while A holds the partition lock
#                   of its text's hash in the text hash; the text is one
#                   another role's entry already uses, so B's
#                   pgss_ng_reset() frees that entry and releases the same
#                   text: it needs the same partition lock.
#   pgss_ng_dealloc candidate_cmp, the comparator of the sort that
#                   pgss_ng_kind_run_eviction() runs holding the dealloc lock
#                   (pgss_ng.max is lowered to 100 with ~150 entries, the
#                   writer evicts down to 95, then A's new statements take
#                   the table past 100: A evicts); B first makes a new
#                   entry, past max, and must finish while A evicts (it
#                   goes on with its statement), then runs pgss_ng_reset(),
#                   which waits for a running eviction.
# No queue for creations past max: A is stopped in pgss_ng_qtext_store,
# called by the init callback of a new entry made with exactly max (100)
# live entries; B makes another new entry while the table is still at max
# and must finish while A is stopped (until issue 19 such creations took
# turns under a named LWLock, pgss_ng_alloc, and B waited on it).
# And the race that creation without a global lock must settle: A is
# stopped in insert_guarded (about to insert its new entry into the hash)
# while B makes, publishes and counts into the entry of the same
# statement; A then finds B's entry, gives its own body back and counts
# into B's (calls 2, no body or text left over).
# And a publication racing a reset: A is stopped in create_body just after
# the dshash_release_lock that publishes its new entry (gdb's finish out of
# that call); B's pgss_ng_reset() then removes the entry and counts it out
# of entries_live, which must already count it: pgss_ng_info shows 0
# entries, not a count wrapped round below zero (4294967295).
# Needs gdb and permission to ptrace a backend (scripts/test.sh lowers
# kernel.yama.ptrace_scope for its run; gdb runs as the server's user):
# otherwise the whole file is skipped, saying why, which scripts/test.sh
# counts as skipped, not passed, and which fails a CI run.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgssNgTest;

plan skip_all => 'gdb is not installed' unless gdb_installed();

my $node = pgss_node(
	'wait_events',
	'pgss_ng.max' => 5000,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'off');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE t1 (x int);
CREATE TABLE t2 (x int);
CREATE TABLE t3 (x int);
CREATE TABLE w (c1 int, c2 int, c3 int, c4 int, c5 int, c6 int, c7 int,
				c8 int, c9 int, c10 int, c11 int, c12 int, c13 int);
CREATE ROLE other LOGIN;
GRANT SELECT ON t3 TO other;
});
# An entry of role "other" whose text A's entry will share (qtext part).
$node->safe_psql('postgres', 'SELECT x FROM t3', extra_params => [ '-U', 'other' ]);

my $sess_a = $node->background_psql('postgres');
my $apid = $sess_a->query_safe('SELECT pg_backend_pid()');
my $sess_b = $node->background_psql('postgres');
my $bpid = $sess_b->query_safe('SELECT pg_backend_pid()');
# The observer: untracked, so it never needs (or evicts under) a pgss_ng
# lock.
my $obs = $node->background_psql('postgres');
$obs->query_safe('SET pgss_ng.track = none');
# Each wait gets the full timeout, not what is left of the session's.
$_->set_query_timer_restart for ($sess_a, $sess_b, $obs);

# Can gdb attach to a backend (ptrace may not be permitted)?  If so, it
# must find the functions the breakpoints go on.
my @symbols =
  qw(pgss_ng_qtext_store candidate_cmp dshash_release_lock insert_guarded);
{
	my ($attached, $out, $why) = gdb_probe($apid, @symbols);
	if (!$attached)
	{
		$sess_a->quit;
		$sess_b->quit;
		$obs->quit;
		$node->stop;
		plan skip_all => "gdb cannot attach to a backend: $why";
	}
	for my $sym (@symbols)
	{
		like($out, qr/Symbol "\Q$sym\E" is/, "gdb finds $sym")
		  or diag("gdb output:\n$out");
	}
}

# Let A go and check that A and B finished their statements (whose
# markers are $am and $bm, if sent) with the expected output, and no error.
sub finish_scenario
{
	my ($name, $g, $am, $want_a, $bm, $want_b) = @_;
	gdb_release($g) if defined $g;
	is(wait_async($sess_a, $am), $want_a, "$name: A finished") if defined $am;
	is(wait_async($sess_b, $bm), $want_b, "$name: B finished") if defined $bm;
	is($sess_a->{stderr} . $sess_b->{stderr}, '', "$name: no error in A or B");
	return;
}

# From here on B is not tracked: its pgss_ng_reset() needs no entry.
$sess_b->query_safe('SET pgss_ng.track = none');

# Attach gdb to A with a breakpoint on $func, for scenario $name; undef
# (with a failed test) if the library was replaced or gdb did not attach.
sub gdb_break_a
{
	my ($name, $func) = @_;
	return gdb_attach($name, $apid, $func);
}

# --- pgss_ng_qtext -------------------------------------------------------------------

{
	my ($g, $am, $bm);
  SCENARIO:
	{
		is( $obs->query_safe(
				q{SELECT count(*) FROM pgss_ng
				  WHERE query = 'SELECT x FROM t3' AND userid = 'other'::regrole::oid}),
			'1',
			'qtext: the entry of role other uses the text');
		$g = gdb_break_a('qtext', 'pgss_ng_qtext_store') or last SCENARIO;

		$am = send_async($sess_a, 'SELECT x FROM t3;');
		last SCENARIO
		  unless ok(stopped_in($g, 'pgss_ng_qtext_store'),
			'qtext: A stopped in pgss_ng_qtext_store');
		# Its first call of dshash_release_lock releases the partition
		# lock it holds on the text's hash.
		stop_next($g, 'qtext', 'dshash_release_lock', 'dshash_release_lock',
			qr/#1 .*pgss_ng_qtext_store/, 'called by pgss_ng_qtext_store')
		  or last SCENARIO;

		# The reset frees the entry of role other, releasing the same text.
		$bm = send_async($sess_b, 'SELECT pgss_ng_reset() IS NOT NULL;');
		is(wait_for_lwlock($obs, $bpid, 'pgss_ng_qtext'), 'LWLock:pgss_ng_qtext',
			'qtext: B waits on LWLock pgss_ng_qtext');
	}
	finish_scenario('qtext', $g, $am, '', $bm, 't');

	# Whichever way the race went, no text leaked or went missing.
	is( $obs->query_safe(
			q{SELECT qtext_count = (SELECT count(DISTINCT query) FROM pgss_ng)
			  FROM pgss_ng_info}),
		't',
		'qtext: qtext_count = distinct texts in the view');
}

# --- two backends creating one entry -----------------------------------------------

{
	$sess_b->query_safe('SET pgss_ng.track = top');
	my ($g, $am, $bm);
  SCENARIO:
	{
		$g = gdb_break_a('race', 'insert_guarded') or last SCENARIO;

		$am = send_async($sess_a, 'SELECT x FROM t2 WHERE x < 7;');
		last SCENARIO
		  unless ok(stopped_in($g, 'insert_guarded'), 'race: A stopped in insert_guarded');
		like(gdb_bt($g), qr/create_body|lookup_or_create/,
			'race: A is creating an entry');

		# B makes the same entry (same user, database, statement) and
		# counts into it, while A waits before its insert.
		is($sess_b->query_safe('SELECT x FROM t2 WHERE x < 7'), '',
			'race: B ran the statement');
		is( $obs->query_safe(
				q{SELECT calls FROM pgss_ng WHERE query = 'SELECT x FROM t2 WHERE x < $1'}),
			'1',
			'race: B\'s entry is published with its call');
	}
	finish_scenario('race', $g, $am, '', undef, undef);
	$sess_b->query_safe('SET pgss_ng.track = none');

	is( $obs->query_safe(
			q{SELECT calls FROM pgss_ng WHERE query = 'SELECT x FROM t2 WHERE x < $1'}),
		'2',
		'race: one entry, both calls');
	is( $obs->query_safe(
			q{SELECT entries = entries_allocated
			  AND qtext_count = (SELECT count(DISTINCT query) FROM pgss_ng)
			  FROM pgss_ng_info}),
		't',
		'race: A\'s own body and text were given back');
}

# --- a new entry published while a reset runs -------------------------------------

{
	my ($g, $am);
  SCENARIO:
	{
		$g = gdb_break_a('publish', 'insert_guarded') or last SCENARIO;

		# A statement without constants: its entry is made when it ends.
		$am = send_async($sess_a, 'SELECT x, x FROM t1;');
		last SCENARIO
		  unless ok(stopped_in($g, 'insert_guarded'),
			'publish: A stopped in insert_guarded');
		# The next dshash_release_lock releases the partition lock under
		# which A published its entry; let it return.
		stop_next($g, 'publish', 'dshash_release_lock', 'dshash_release_lock',
			qr/#1 .*(?:create_body|lookup_or_create)/, 'called by create_body')
		  or last SCENARIO;
		gdb_send($g, 'finish');
		last SCENARIO
		  unless ok(defined gdb_wait($g, qr/Run till exit.*\n.*\(/),
			'publish: A returned from dshash_release_lock');

		# B (untracked) removes every entry, A's new one included.
		is($sess_b->query_safe('SELECT pgss_ng_reset() IS NOT NULL'),
			't', 'publish: B reset while A is stopped');
		is($obs->query_safe('SELECT entries FROM pgss_ng_info'),
			'0', 'publish: no entries after the reset, none counted twice');
	}
	finish_scenario('publish', $g, $am, '', undef, undef);
	is($obs->query_safe('SELECT entries FROM pgss_ng_info'),
		'0', 'publish: still no entries once A finished');
}

# --- pgss_ng_dealloc -----------------------------------------------------------------

{
	# About 150 entries (under the backstop of max 100, 200).
	$node->safe_psql(
		'postgres', q{
SELECT format('SELECT c%s, c%s FROM w', i, j)
FROM generate_series(1, 13) i, generate_series(1, 12) j \gexec
});
	# A's statement to come exists already: its end only flushes and evicts.
	is($sess_a->query_safe('SHOW pgss_ng.max'), '5000', 'dealloc: max is 5000');
	cmp_ok($obs->query_safe('SELECT entries FROM pgss_ng_info'),
		'>', 150, 'dealloc: more than 150 entries');

	my ($g, $am, $bm);
  SCENARIO:
	{
		# Lower max.  The writer publishes it to every backend and evicts
		# down to it at once (95 entries): wait until it has.
		$obs->query_safe('ALTER SYSTEM SET pgss_ng.max = 100');
		$obs->query_safe('SELECT pg_reload_conf()');
		my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
		usleep(50_000)
		  while $obs->query_safe(
			'SELECT entries_max = 100 AND entries <= 100 FROM pgss_ng_info') ne 't'
		  && time() < $deadline;

		# A makes new entries (shapes never seen: column 13 second) until
		# one takes the table past max: that creation evicts, and stops in
		# the sort.
		$g = gdb_break_a('dealloc', 'candidate_cmp') or last SCENARIO;
		$am = send_async($sess_a,
			join('', map { "SELECT c$_, c13 FROM w;\n" } 1 .. 13)
			  . 'SELECT entries_max FROM pgss_ng_info;');
		last SCENARIO
		  unless ok(stopped_in($g, 'candidate_cmp'),
			'dealloc: A stopped in candidate_cmp');
		like(gdb_bt($g), qr/pgss_ng_kind_run_eviction/,
			'dealloc: called by pgss_ng_kind_run_eviction');

		# B, tracked, makes a new entry past max: its eviction finds the
		# dealloc lock busy and its statement goes on.
		$bm = send_async($sess_b,
			'SET pgss_ng.track = top; SELECT x, x, x FROM t1; SET pgss_ng.track = none;');
		is(wait_async($sess_b, $bm), '',
			'dealloc: B made a new entry past max while A evicts');
		is($obs->query_safe(
				q{SELECT calls FROM pgss_ng WHERE query = 'SELECT x, x, x FROM t1'}),
			'1', 'dealloc: B\'s new entry is there, with its call');

		$bm = send_async($sess_b, 'SELECT pgss_ng_reset() IS NOT NULL;');
		is(wait_for_lwlock($obs, $bpid, 'pgss_ng_dealloc'),
			'LWLock:pgss_ng_dealloc',
			'dealloc: B waits on LWLock pgss_ng_dealloc');
	}
	finish_scenario('dealloc', $g, $am, '100', $bm, 't');
}

# --- creations past max: no queue ---------------------------------------------------

# max is 100 now (the dealloc part).  B is tracked again; both A and B
# must have read the new max.
$sess_b->query_safe('SET pgss_ng.track = top');
for my $s ($sess_a, $sess_b)
{
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(50_000)
	  while $s->query_safe('SHOW pgss_ng.max') ne '100' && time() < $deadline;
}
is($sess_b->query_safe('SHOW pgss_ng.max'), '100', 'past max: max is 100');

# Exactly max live entries: A runs new statements (one entry each, no
# eviction at or below max) until the observer counts 100.
{
	my $n = 0;
	my ($i, $j) = (1, 1);
	while ($obs->query_safe('SELECT entries FROM pgss_ng_info') < 100 && $n < 200)
	{
		$sess_a->query_safe("SELECT c$i, c$j FROM w");
		($i, $j) = $j == 13 ? ($i + 1, 1) : ($i, $j + 1);
		$n++;
	}
	is($obs->query_safe('SELECT entries FROM pgss_ng_info'), '100',
		'past max: exactly 100 live entries');
}

{
	my ($g, $am, $bm);
  SCENARIO:
	{
		$g = gdb_break_a('past max', 'pgss_ng_qtext_store') or last SCENARIO;

		# A and B each run a statement never seen before: its entry is made.
		$am = send_async($sess_a, 'SELECT x FROM t1;');
		last SCENARIO
		  unless ok(stopped_in($g, 'pgss_ng_qtext_store'),
			'past max: A stopped in pgss_ng_qtext_store');
		like(gdb_bt($g), qr/stmt_init.*(?:create_body|lookup_or_create)/s,
			'past max: called by the init callback of a creation');

		# B's new entry, past max too, is made while A is stopped.
		$bm = send_async($sess_b, 'SELECT x FROM t2;');
		is(wait_async($sess_b, $bm), '',
			'past max: B made its new entry while A is stopped in its creation');
		is($obs->query_safe(
				q{SELECT calls FROM pgss_ng WHERE query = 'SELECT x FROM t2'}),
			'1', 'past max: B\'s entry is there, with its call');
	}
	finish_scenario('past max', $g, $am, '', undef, undef);

	is( $obs->query_safe(
			q{SELECT string_agg(query || ' ' || calls, ', ' ORDER BY query)
			  FROM pgss_ng WHERE query IN ('SELECT x FROM t1', 'SELECT x FROM t2')}),
		'SELECT x FROM t1 1, SELECT x FROM t2 1',
		'past max: both statements recorded once');
	# B's creation took the table past max; its eviction brought it back.
	cmp_ok($obs->query_safe('SELECT entries FROM pgss_ng_info'), '<=', 100,
		'past max: at most max entries afterwards');
}

for my $s ($sess_a, $sess_b, $obs)
{
	$s->{timeout}->start;
	$s->quit;
}

stop_and_check_log($node);

done_testing();
