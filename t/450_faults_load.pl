# Faults: shared-memory exhaustion at each allocation site, statements that
# fail, are cancelled or whose backend is killed, and configuration reloads
# under load.  Never an ERROR from pgss_ng in a user's statement, no leaked
# lock (every later session finishes within a timeout), no leaked
# reference (idle, entries_allocated = entries).
#
# 1. Text site (query_text_memory = 256kB), all statements of exactly
#    3000 bytes.  First four concurrent clients run 20 hot statements, each
#    client each statement 10 times (60 kB of text: it fits).  Then they
#    run 200 cold statements, three times each, plus one statement longer
#    than the whole arena.  The cold texts are more than the arena holds:
#    entries are evicted to make room (entries_evicted >= dealloc > 0),
#    least valuable first,
#    so never a hot entry (usage 41 against at most 4 for a cold one, which
#    decay would take minutes to undo): each hot statement keeps exactly 40
#    calls and its exact text.  The executions of evicted cold entries are
#    lost, as in pg_stat_statements, so a cold entry left has 1 to 3
#    calls; nothing is dropped (dropped = 0); qtext_bytes stays under the
#    cap and ends past the low-water mark of eviction for room (which
#    starts with 1/8 of the cap free and frees down to 2/8); entries
#    without text are at most qtext_dropped (the huge statement's text is
#    never stored); stored texts are exact.  A full reset frees every text
#    and entry (all counters 0), and a second run gives the hot statements
#    40 calls again and fills the arena past that mark again: the freed space
#    is reusable.
# 2. Entry site (pgss_ng.max = 100, backstop 200): one DO block runs 600
#    distinct nested statements (track = all): one backend holds at most
#    its share of references (early flushes), so eviction keeps up and nothing is
#    refused (entries_evicted + entries = 601).  The backstop itself: 8 sessions
#    each keep 25 references after a failed DO block (taken under max =
#    1000: at max 100 each session's share of the backstop's headroom is a
#    few references, so that sessions cannot fill it; max is 100 again
#    before the reset), a reset leaves 200 referenced bodies allocated, and
#    5 new statements are refused and counted (backstop_skips = dropped =
#    5) until the holders flush.  Then
#    1000 distinct top-level statements: evicted as they come
#    (entries_evicted + entries = 1000, 5 entries per eviction run
#    (dealloc), nothing dropped, entries <= 100).
# 3. Errors and cancels: nested statements of a function that then raises
#    are counted exactly once the session runs its next statement, the
#    failures in errors (no call); a reset
#    while a failed session still holds references leaves the bodies
#    allocated until that session's next statement, which frees them;
#    a statement_timeout cancelling a loop of nested statements loses no
#    count (a sequence counts the executions: calls = executions, or one
#    less when the cancel hit between nextval() and the end of its
#    statement).  After each, sessions finish within a timeout and
#    entries_allocated = entries.
# 4. SIGKILL of a backend busy in pgss_ng (three workloads: top-level churn
#    with eviction, nested statements past the backstop, view reads and
#    resets): the postmaster crash-restarts; then pgss_ng is empty (as
#    designed), stats_reset is new, counts are exact again and reset works.
#    The log shows exactly the three SIGKILLs and no other crash or TRAP.
# 5. pg_ctl reload changing pgss_ng.max, track, track_utility and
#    track_planning every 0.5 s while pgbench runs (churn, nested
#    statements, utility statements): no client error, no ERROR in the
#    log; after the last reload (max = 100) and one more statement,
#    entries <= 100 and every dropped body was freed.
# 6. Lowering max from 1000 to 100 with 601 entries, then running only
#    new statements, each in a new session: entries come down to <= 100
#    and the new statements are recorded (not stuck at the backstop).
# Failures recorded with the text arena full (1.) and at the backstop (2.):
#    counted on an entry without text, or refused and dropped; nothing
#    but the statement's own ERROR reaches the client.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

use PgssNgTest;

my $tmp = PostgreSQL::Test::Utils::tempdir();
# No statement, session or client may take longer: it would be stuck (a
# leaked lock).  The suite's standard timeout (PG_TEST_TIMEOUT_DEFAULT,
# 180 s unless set), not less: a busy 2-core machine is slow, not stuck.
my $cmd_timeout = $PostgreSQL::Test::Utils::timeout_default;

# The table w (c1 .. c100 int, empty): distinct statements by structure.
my $make_w = q{
SELECT format('CREATE TABLE w (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, 100) i \gexec
};

# Run SQL within the timeout; returns (exit code, stdout, stderr).  A
# session that did not finish is a test failure (a leaked lock).
sub timed_psql
{
	my ($node, $sql, $what, %opt) = @_;
	my ($out, $err, $timed_out) = ('', '', 0);
	local $ENV{PGOPTIONS} = $opt{untracked} ? '-c pgss_ng.track=none' : '';
	my $rc = $node->psql(
		'postgres', $sql,
		stdout => \$out,
		stderr => \$err,
		timeout => $cmd_timeout,
		timed_out => \$timed_out,
		extra_params => $opt{extra} // []);
	ok(!$timed_out, "$what: finished within ${cmd_timeout}s");
	return ($rc // -1, $out, $err);
}

# psql that must succeed with no stderr; returns stdout.
sub ok_psql
{
	my ($node, $sql, $what, %opt) = @_;
	my ($rc, $out, $err) = timed_psql($node, $sql, $what, %opt);
	is("$rc $err", '0 ', "$what: no error") or diag($err);
	return $out;
}

# A query made by an untracked session (PGOPTIONS), so that reading the
# counters adds no entry.
sub check
{
	my ($node, $sql) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->safe_psql('postgres', $sql, timeout => $cmd_timeout);
}

sub poll_untracked
{
	my ($node, $sql, $want) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $node->poll_query_until('postgres', $sql, $want);
}

sub info
{
	my ($node, $cols) = @_;
	return check($node, "SELECT $cols FROM pgss_ng_info");
}

# Log lines that must never appear (crashes are looked for separately).
my $bad_log = qr/TRAP:|PANIC:|pgss_ng could not|\bERROR:/;

# ==================================================== 1. text site
{
	my $node = pgss_node(
		'text_site',
		'pgss_ng.query_text_memory' => 256,
		'pgss_ng.track' => 'top',
		'pgss_ng.save' => 'off');
	$node->safe_psql('postgres', "CREATE EXTENSION pgss_ng; $make_w
		CREATE ROLE longq LOGIN; GRANT SELECT ON w TO longq;");
	my $longq = $node->safe_psql('postgres', q{SELECT 'longq'::regrole::oid});

	my $len = 3000;
	# a statement of exactly $len bytes: $head, then a comment of $fill
	my $sized = sub {
		my ($head, $fill) = @_;
		return $head . ' /* ' . ($fill x ($len - length($head) - 7)) . ' */';
	};
	my @stmts;
	for my $i (1 .. 200)
	{
		my $a = 1 + $i % 100;
		my $b = 1 + int($i / 100);
		push @stmts, $sized->("SELECT c$a, c$b FROM w", 'x');
	}
	# three columns: other query ids than the cold statements'
	my @hot = map { $sized->("SELECT c$_, c$_, c$_ FROM w", 'h') } 1 .. 20;
	my $huge = 'SELECT c1, c2, c3, c4 FROM w /* ' . ('y' x 300_000) . ' */';

	# Four clients, each running the lines $lines->($k) gives, from
	# different places in the lists: stores race for the arena.
	my $run = sub {
		my ($label, $lines) = @_;
		my (@h, @out, @err);
		for my $k (0 .. 3)
		{
			my $f = "$tmp/long_$label$k.sql";
			open(my $fh, '>', $f) or die "$f: $!";
			print $fh "$_;\n" for $lines->($k);
			close($fh);
			($out[$k], $err[$k]) = ('', '');
			$h[$k] = IPC::Run::start(
				[
					$node->installed_command('psql'), '-X', '-q',
					'-v', 'ON_ERROR_STOP=1', '-o', '/dev/null', '-f', $f,
					'-d', $node->connstr('postgres') . ' user=longq'
				],
				'<', \undef, '>', \$out[$k], '2>', \$err[$k],
				IPC::Run::timeout($cmd_timeout));
		}
		for my $k (0 .. 3)
		{
			$h[$k]->finish;
			is($h[$k]->result(0) . " $err[$k]", '0 ',
				"text site, $label, client $k: no error");
		}
		ok(poll_untracked($node, q{SELECT count(*) FROM pg_stat_activity
								  WHERE usename = 'longq'}, '0'),
			"text site, $label: clients gone");
	};
	# hot: each client runs every hot statement 10 times (40 calls each)
	my $hot_lines = sub {
		my ($k) = @_;
		return map { my $r = $_; map { $hot[ ($_ + 5 * $k + $r) % @hot ] }
			  0 .. $#hot } 1 .. 10;
	};
	# cold: client k runs every statement j with j % 4 != k, so each runs
	# three times, by three clients; client 0 ends with the huge one
	my $cold_lines = sub {
		my ($k, $with_huge) = @_;
		my @l;
		for my $i (0 .. $#stmts)
		{
			my $j = ($i + 50 * $k) % @stmts;
			push @l, $stmts[$j] unless $j % 4 == $k;
		}
		push @l, $huge if $with_huge && $k == 0;
		return @l;
	};

	# One row: hot entries with 40 calls and their exact text; cold
	# entries; cold entries with calls outside 1..3; entries without text;
	# exact stored cold texts.
	my $rows_sql = qq{
		SELECT count(*) FILTER (WHERE calls = 40 AND length(query) = $len
								AND query LIKE 'SELECT c%, c%, c% FROM w /* h%h */'),
			   count(*) FILTER (WHERE query IS NULL
								OR query NOT LIKE '% /* h%h */'),
			   count(*) FILTER (WHERE calls NOT BETWEEN 1 AND 3
								AND query NOT LIKE '% /* h%h */'),
			   count(*) FILTER (WHERE query IS NULL),
			   count(*) FILTER (WHERE length(query) = $len
								AND query LIKE 'SELECT c%, c% FROM w /* x%x */')
		FROM pgss_ng WHERE userid = $longq};

	check($node, 'SELECT pgss_ng_reset()');
	is(info($node, 'entries, entries_allocated, qtext_count, qtext_bytes'),
		'0|0|0|0', 'text site: empty after a full reset');

	$run->('hot1', $hot_lines);
	is(check($node, $rows_sql), '20|0|0|0|0',
		'text site: 20 hot statements, 40 calls each, exact texts');
	$run->('first', sub { $cold_lines->($_[0], 1) });

	my ($qb, $ql, $qc, $qd, $dropped, $dealloc, $evicted) = split /\|/,
	  info($node,
		'qtext_bytes, qtext_limit_bytes, qtext_count, qtext_dropped, dropped, '
		  . 'dealloc, entries_evicted');
	is($ql, 256 * 1024, 'qtext_limit_bytes = 256kB');
	cmp_ok($qb, '<=', $ql, "qtext_bytes $qb <= qtext_limit_bytes");
	is($dropped, 0, 'no execution dropped');
	my ($nhot, $ncold, $nbadcalls, $nnull, $nexact) = split /\|/,
	  check($node, $rows_sql);
	is($nhot, 20,
		'text site: every hot statement kept, 40 calls, exact text');
	cmp_ok($dealloc, '>', 0, 'text site: eviction ran to make room');
	cmp_ok($evicted, '>=', $dealloc,
		'text site: each eviction run evicted entries');
	cmp_ok($ncold + $evicted, '>=', 201,
		'text site: 201 cold statements, each kept or evicted');
	is($nbadcalls, 0, 'text site: every cold entry left counted 1 to 3 times');
	cmp_ok($qd, '>=', 1, 'text site: the huge text was not stored');
	cmp_ok($nnull, '<=', $qd,
		"text site: entries without text ($nnull) <= qtext_dropped");
	is($nhot + $nexact, $qc, 'text site: every stored text is exact and counted');
	cmp_ok($qb, '>=', $qc * ($len + 1), 'qtext_bytes covers the stored texts');
	# eviction for room starts past the cap minus 1/8 and frees down to the
	# cap minus 2/8 (its low-water mark)
	cmp_ok($qb, '>', $ql - 2 * $ql / 8 - 2 * $len,
		'text site: the arena was filled past its low-water mark');

	# A failure recorded while the arena is full: a utility statement (no
	# entry made at parse analysis) whose text is larger than 1/8 of the
	# arena (never stored, even by making room: issue 14) fails; its entry
	# is made when the failure is merged (at the session's exit), without
	# text.  Nothing but the statement's own ERROR reaches the client (its
	# log line is kept out of the server log).
	{
		my $fail =
		  'DROP TABLE no_such_table /* ' . ('z' x (40 * 1024)) . ' */';
		my ($out, $err) = ('', '');
		local $ENV{PGOPTIONS} = '-c log_min_messages=fatal';
		my $rc = $node->psql('postgres', $fail, stdout => \$out,
			stderr => \$err, timeout => $cmd_timeout);
		is("$rc $err",
			qq{3 psql:<stdin>:1: ERROR:  table "no_such_table" does not exist},
			'text site: a failure with the arena full raises only its own ERROR');
		ok(poll_untracked($node, q{SELECT count(*) FROM pg_stat_activity
								  WHERE backend_type = 'client backend'
									AND pid <> pg_backend_pid()}, '0'),
			'text site: the failed session is gone');
		is( check(
				$node, q{
				SELECT calls || ' ' || errors || ' ' || (query IS NULL)
				FROM pgss_ng WHERE userid = 10 AND errors > 0}),
			'0 1 true',
			'text site: the failure counted on an entry without text');
		is(info($node, 'qtext_dropped, dropped'), ($qd + 1) . '|0',
			'text site: its text counted in qtext_dropped, nothing dropped');
	}

	check($node, 'SELECT pgss_ng_reset()');
	is( info(
			$node,
			'entries, entries_allocated, qtext_count, qtext_bytes, qtext_dropped'
		),
		'0|0|0|0|0',
		'text site: a full reset frees every entry and text');

	$run->('hot2', $hot_lines);
	$run->('second', sub { $cold_lines->($_[0], 0) });
	($qb, $qc, $evicted) = split /\|/,
	  info($node, 'qtext_bytes, qtext_count, entries_evicted');
	($nhot, $ncold, $nbadcalls, $nnull, $nexact) = split /\|/,
	  check($node, $rows_sql);
	is($nhot, 20, 'text site: second run: hot statements kept, 40 calls each');
	cmp_ok($evicted, '>', 0, 'text site: second run: entries evicted');
	cmp_ok($qb, '>', $ql - 2 * $ql / 8 - 2 * $len,
		'text site: the second run fills the arena past the mark again');
	cmp_ok($qb, '<=', $ql, 'text site: second run: qtext_bytes <= the cap');
	is($nhot + $nexact, $qc, 'text site: second run: every stored text is exact');
	is($nbadcalls, 0,
		'text site: second run: every cold entry left counted 1 to 3 times');

	$node->stop;
	my $log = slurp_file($node->logfile);
	is(join("\n", grep { /$bad_log|terminated by signal/ } split /\n/, $log),
		'', 'text site: nothing bad in the server log');
}

# ==================================================== 2-4. entry site, errors, kills
my $node = pgss_node(
	'faults',
	'pgss_ng.max' => 100,
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.save' => 'on',
	restart_after_crash => 'on',
	max_connections => 20);
$node->safe_psql('postgres', "CREATE EXTENSION pgss_ng; $make_w");

# ---------------------------------------------------- 2. entry site
{
	my @pairs;
	for my $i (1 .. 99)
	{
		push @pairs, [ $i, $_ ] for $i + 1 .. 100;
	}
	my $do = "DO \$\$BEGIN\n"
	  . join('', map { "PERFORM c$_->[0], c$_->[1] FROM w;\n" } @pairs[ 0 .. 599 ])
	  . "END\$\$;";

	check($node, 'SELECT pgss_ng_reset()');
	ok_psql($node, $do, 'entry site: DO block of 600 nested statements');
	# One session holds at most its share of references (early flushes),
	# so eviction keeps up: nothing is refused, everything made is either
	# live or evicted (600 nested statements + the DO block itself).
	{
		my ($skips, $dropped, $evicted, $entries, $alloc) = split /\|/,
		  info($node,
			'backstop_skips, dropped, entries_evicted, entries, '
			  . 'entries_allocated');
		is("$skips $dropped", '0 0',
			'entry site: one session cannot fill the backstop');
		is($evicted + $entries, 601,
			'entry site: entries_evicted + entries = 601');
		cmp_ok($entries, '<=', 100,
			'entry site: entries <= max after the block');
		is($alloc, $entries, 'entry site: entries_allocated = entries');
	}
	is( check(
			$node,
			q{SELECT count(*) = sum(calls) FROM pgss_ng WHERE NOT toplevel}),
		't',
		'entry site: nested statements shown have one call each');

	# The backstop: 8 sessions each count 25 distinct nested statements in
	# a DO block that then fails, so each keeps 25 references (pending
	# until its next statement).  At max 100 a session may hold only its
	# share of the backstop's headroom (a few references), so they take
	# them under max 1000; with max 100 again, a reset drops all entries:
	# 200 bodies stay allocated (= max + min(max, 20000)), and new
	# statements are refused and counted until those sessions flush.
	$node->append_conf('postgresql.conf', "pgss_ng.max = 1000\n");
	$node->reload;
	ok(poll_untracked($node, 'SELECT entries_max FROM pgss_ng_info', '1000'),
		'backstop: max = 1000 for the holders');
	check($node, 'SELECT pgss_ng_reset()');
	my @holders;
	for my $h (0 .. 7)
	{
		my $hold = "DO \$\$BEGIN\n"
		  . join('',
			map { "PERFORM c$_->[0], c$_->[1] FROM w;\n" }
			  @pairs[ 2000 + 25 * $h .. 2000 + 25 * $h + 24 ])
		  . "RAISE EXCEPTION 'hold';\nEND\$\$;";
		my $b = $node->background_psql('postgres', on_error_stop => 0,
			timeout => $cmd_timeout);
		$b->set_query_timer_restart;    # the timeout is per query
		$b->query($hold);
		like($b->{stderr}, qr/ERROR:  hold/, "backstop: holder $h failed");
		$b->{stderr} = '';
		push @holders, $b;
	}
	$node->append_conf('postgresql.conf', "pgss_ng.max = 100\n");
	$node->reload;
	ok(poll_untracked($node, 'SELECT entries_max FROM pgss_ng_info', '100'),
		'backstop: max = 100 again');
	check($node, 'SELECT pgss_ng_reset()');
	is(info($node, 'entries, entries_allocated'),
		'0|200', 'backstop: 200 dropped bodies still referenced');
	ok_psql($node,
		join('', map { "SELECT c$_->[0], c$_->[1] FROM w;\n" } @pairs[ 2300 .. 2304 ]),
		'backstop: 5 new statements at the backstop', extra => [ '-o', '/dev/null' ]);
	is(info($node, 'backstop_skips, dropped, entries, entries_allocated'),
		'5|5|0|200', 'backstop: all 5 refused and counted, nothing over 200');
	# A failure at the backstop: its entry cannot be made when the failure
	# is merged (at the session's exit); refused and dropped, and nothing
	# but the statement's own ERROR reaches the client.
	{
		my ($out, $err) = ('', '');
		local $ENV{PGOPTIONS} = '-c log_min_messages=fatal';
		my $rc = $node->psql('postgres', 'DROP TABLE no_such_table',
			stdout => \$out, stderr => \$err, timeout => $cmd_timeout);
		is("$rc $err",
			qq{3 psql:<stdin>:1: ERROR:  table "no_such_table" does not exist},
			'backstop: a failure at the backstop raises only its own ERROR');
		ok(poll_untracked($node, q{SELECT count(*) FROM pg_stat_activity
								  WHERE query = 'DROP TABLE no_such_table'},
				'0'),
			'backstop: the failed session is gone');
		is(info($node, 'backstop_skips, dropped, entries, entries_allocated'),
			'6|6|0|200', 'backstop: its failure refused and dropped');
	}
	$_->query_safe('SELECT 1') for @holders;
	$_->quit for @holders;
	is(info($node, 'entries_allocated'),
		info($node, 'entries'), 'backstop: bodies freed once the holders flush');

	check($node, 'SELECT pgss_ng_reset()');
	my $sql = join('', map { "SELECT c$_->[0], c$_->[1] FROM w;\n" }
		  @pairs[ 1000 .. 1999 ]);
	ok_psql($node, $sql, 'entry site: 1000 distinct top-level statements',
		extra => [ '-o', '/dev/null' ]);
	my ($dealloc, $evicted, $entries, $alloc, $skips, $dropped) = split /\|/,
	  info($node,
		'dealloc, entries_evicted, entries, entries_allocated, '
		  . 'backstop_skips, dropped');
	is($evicted + $entries, 1000,
		'entry site: entries_evicted + entries = 1000');
	is($evicted, 5 * $dealloc,
		'entry site: each eviction run (dealloc) evicted a batch of 5');
	is("$skips $dropped", '0 0', 'entry site: nothing refused or dropped');
	cmp_ok($entries, '<=', 100, 'entry site: entries <= max');
	is($alloc, $entries, 'entry site: entries_allocated = entries');
}

# ---------------------------------------------------- 3. errors, cancels
{
	$node->safe_psql(
		'postgres', q{
CREATE FUNCTION f_fail() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM c1 FROM w;
  PERFORM c2 FROM w;
  PERFORM c3 FROM w;
  RAISE EXCEPTION 'boom';
END$$;
CREATE SEQUENCE sq;
});

	check($node, 'SELECT pgss_ng_reset()');
	my $s = $node->background_psql('postgres', on_error_stop => 0,
		timeout => $cmd_timeout);
	$s->set_query_timer_restart;    # the timeout is per query
	for (1 .. 3)
	{
		my ($out, $err) = $s->query('SELECT f_fail()');
		like($s->{stderr}, qr/ERROR:  boom/, 'f_fail raises its own error');
		$s->{stderr} = '';
	}
	$s->query('SELECT 1/0');
	like($s->{stderr}, qr/ERROR:  division by zero/, 'SELECT 1/0 fails');
	$s->{stderr} = '';

	# No statement of that session ended, but each failure was merged and
	# flushed, with the nested counts of its call, when the session's next
	# statement began (issue 22, item 2): the three calls of f_fail are
	# seen; the failure of SELECT 1/0, the last one, is still pending.
	is( check(
			$node, q{
			SELECT string_agg(query || ':' || calls || ':' || errors, ', '
							  ORDER BY query)
			FROM pgss_ng WHERE query LIKE 'SELECT c_ FROM w'
							OR query LIKE 'SELECT f_fail()'}),
		'SELECT c1 FROM w:3:0, SELECT c2 FROM w:3:0, '
		  . 'SELECT c3 FROM w:3:0, SELECT f_fail():0:3',
		'failed calls flushed when the next statement began');
	$s->query_safe('SELECT 42 AS flush');
	is( check(
			$node, q{
			SELECT string_agg(query || ':' || calls || ':' || toplevel, ', '
							  ORDER BY query)
			FROM pgss_ng WHERE query LIKE 'SELECT c_ FROM w'
							OR query LIKE 'SELECT f_fail()'
							OR query LIKE 'SELECT $1/$2'}),
		'SELECT $1/$2:0:true, SELECT c1 FROM w:3:false, '
		  . 'SELECT c2 FROM w:3:false, SELECT c3 FROM w:3:false, '
		  . 'SELECT f_fail():0:true',
		'nested statements of the failed calls counted exactly, the failed '
		  . 'top-level statements with no call');
	is( check(
			$node, q{
			SELECT string_agg(query || ':' || errors, ', ' ORDER BY query)
			FROM pgss_ng WHERE errors > 0}),
		'SELECT $1/$2:1, SELECT f_fail():3',
		'the failed top-level statements counted in errors');

	# A reset while the failed session holds references.
	$s->query('SELECT f_fail()');
	$s->{stderr} = '';
	my ($e0, $a0) = split /\|/, info($node, 'entries, entries_allocated');
	is($a0, $e0, 'holding references to live entries: allocated = entries');
	check($node, 'SELECT pgss_ng_reset()');
	is(info($node, 'entries, entries_allocated'),
		'0|3', 'after a reset, the 3 referenced bodies stay allocated');
	$s->query_safe('SELECT 43 AS flush');
	my ($e1, $a1) = split /\|/, info($node, 'entries, entries_allocated');
	is($a1, $e1,
		"the session's next statement freed them (allocated = entries = $e1)");
	is( check(
			$node,
			q{SELECT count(*) FROM pgss_ng WHERE query LIKE 'SELECT c_ FROM w'}),
		'0',
		'counts held across the reset were discarded');

	# Cancels: a loop of nested statements, and a sleep.
	check($node, 'SELECT pgss_ng_reset()');
	$s->query_safe(q{SET statement_timeout = '500ms'});
	$s->query(
		q{DO $$BEGIN LOOP PERFORM nextval('sq'); PERFORM c4 FROM w; END LOOP; END$$});
	like($s->{stderr}, qr/canceling statement due to statement timeout/,
		'the loop was cancelled');
	$s->{stderr} = '';
	$s->query('SELECT pg_sleep(5)');
	like($s->{stderr}, qr/canceling statement due to statement timeout/,
		'the sleep was cancelled');
	$s->{stderr} = '';
	$s->query_safe('RESET statement_timeout');
	$s->quit;
	ok( $node->poll_query_until(
			'postgres', q{SELECT count(*) FROM pg_stat_activity
						  WHERE backend_type = 'client backend'
							AND pid <> pg_backend_pid()}, '0'),
		'the failed session has exited');
	my ($n, $calls, $c4) = split /\|/, check(
		$node, q{
		SELECT (SELECT last_value FROM sq),
			   (SELECT calls FROM pgss_ng WHERE query = 'SELECT nextval($1)'),
			   (SELECT calls FROM pgss_ng WHERE query = 'SELECT c4 FROM w')});
	note("nextval executions $n, calls $calls, c4 calls $c4");
	ok( $calls == $n || $calls == $n - 1,
		"cancelled loop: nextval calls ($calls) = executions ($n) or one less");
	ok($c4 == $calls || $c4 == $calls - 1,
		"cancelled loop: c4 calls ($c4) follow nextval calls");
	my ($e2, $a2) = split /\|/, info($node, 'entries, entries_allocated');
	is($a2, $e2, 'after errors and cancels, idle: entries_allocated = entries');
	ok_psql($node, 'SELECT pgss_ng_reset(); SELECT count(*) FROM pgss_ng',
		'reset and read after errors and cancels');
	is(info($node, 'entries, entries_allocated'),
		'2|2', 'after a reset, only the two statements made since remain');
}

# ---------------------------------------------------- 4. SIGKILL
{
	my @busy = (
		[
			'top-level churn with eviction',
			q{SELECT format('SELECT c%s, c%s, c%s FROM w', 1 + i % 100,
							1 + (i / 100) % 100, 1 + (i / 10000) % 100)
			  FROM generate_series(1, 1000000) i \gexec}
		],
		[
			'nested statements past the backstop',
			q{DO $$BEGIN
				FOR i IN 1 .. 1000000 LOOP
				  EXECUTE format('SELECT c%s, c%s, c%s FROM w', 1 + i % 100,
								 1 + (i / 100) % 100, 1 + (i / 10000) % 100);
				END LOOP;
			  END$$;}
		],
		[
			'view reads, resets and statements',
			q{SELECT format('SELECT count(*) FROM pgss_ng; SELECT pgss_ng_reset(queryid => 0); SELECT c%s, c%s FROM w; SELECT pgss_ng_reset(); SELECT * FROM pgss_ng_info',
							1 + i % 100, 1 + (i / 100) % 100)
			  FROM generate_series(1, 1000000) i \gexec}
		]);
	my $nkill = 0;
	for my $b (@busy)
	{
		my ($what, $sql) = @$b;
		my $app = "busy$nkill";
		my $before = info($node, 'stats_reset');
		my ($out, $err) = ('', '');
		append_to_file("$tmp/$app.sql", "$sql\n");
		my $h = IPC::Run::start(
			[
				$node->installed_command('psql'), '-X', '-q',
				'-o', '/dev/null', '-f', "$tmp/$app.sql",
				'-d', $node->connstr('postgres') . " application_name=$app"
			],
			'<', \undef, '>', \$out, '2>', \$err,
			IPC::Run::timeout($cmd_timeout));
		my $pid;
		my $until = time() + $cmd_timeout;
		while (time() < $until)
		{
			$pid = check($node,
				qq{SELECT pid FROM pg_stat_activity
				   WHERE application_name = '$app' AND state = 'active'});
			last if $pid =~ /^\d+$/;
			usleep(50_000);
		}
		like($pid, qr/^\d+$/, "kill ($what): busy backend found");
		# let it work for a while, in pgss_ng most of the time
		usleep(1_500_000);
		my $offset = -s $node->logfile;
		kill 'KILL', $pid;
		$nkill++;
		$node->wait_for_log(qr/all server processes terminated; reinitializing/,
			$offset);
		$node->wait_for_log(qr/database system is ready to accept connections/,
			$offset);
		$h->finish;
		isnt($h->result(0), 0, "kill ($what): the client lost its connection");

		is(info($node, "stats_reset > '$before'"), 't',
			"kill ($what): shared memory reinitialized (stats_reset is new)");
		is( info(
				$node,
				'entries, entries_allocated, qtext_count, dropped, dealloc'),
			'0|0|0|0|0',
			"kill ($what): pgss_ng starts empty after the crash restart");
		ok_psql(
			$node,
			'SELECT count(*) FROM w; SELECT count(*) FROM w; SELECT count(*) FROM w',
			"kill ($what): statements after recovery");
		is( check(
				$node,
				q{SELECT calls FROM pgss_ng WHERE query = 'SELECT count(*) FROM w'}),
			'3',
			"kill ($what): counts exact after recovery");
		ok_psql($node, 'SELECT pgss_ng_reset()', "kill ($what): reset works");
		is( check(
				$node,
				q{SELECT count(*) FROM pgss_ng WHERE query = 'SELECT count(*) FROM w'}),
			'0',
			"kill ($what): reset removed the entry");
		my ($e, $a) = split /\|/, info($node, 'entries, entries_allocated');
		is($a, $e, "kill ($what): entries_allocated = entries");
	}

	$node->stop;
	my $log = slurp_file($node->logfile);
	my @crashes = grep { /terminated by signal|was terminated by/ } split /\n/,
	  $log;
	is(scalar(@crashes), $nkill, 'exactly one crash per SIGKILL')
	  or diag(join("\n", @crashes));
	is(scalar(grep { !/terminated by signal 9: Killed/ } @crashes), 0,
		'every crash was one of the SIGKILLs');
	my @bad = grep { /TRAP:|PANIC:|pgss_ng could not/ } split /\n/, $log;
	is(join("\n", @bad), '', 'no TRAP, PANIC or pgss_ng error in the log');
}

# ==================================================== 5. reload under load
{
	my $rnode = pgss_node(
		'reload',
		'pgss_ng.max' => 1000,
		'pgss_ng.track' => 'top',
		'pgss_ng.save' => 'off',
		max_connections => 20);
	$rnode->safe_psql(
		'postgres', qq{CREATE EXTENSION pgss_ng; $make_w
CREATE FUNCTION f_nest(a int) RETURNS bigint LANGUAGE plpgsql AS \$\$
BEGIN
  PERFORM c1 FROM w WHERE c2 = a;
  RETURN (SELECT count(*) FROM w WHERE c3 = a);
END\$\$;});

	my %scripts = (
		churn => q{\set a random(1, 100)
\set b random(1, 100)
SELECT c:a, c:b FROM w;
},
		nested => q{\set a random(1, 1000)
SELECT f_nest(:a);
},
		utility => q{\set a random(64, 1000)
BEGIN;
SET LOCAL work_mem = :a;
SELECT count(*) FROM w WHERE c5 = :a;
COMMIT;
},);
	for my $k (keys %scripts)
	{
		append_to_file("$tmp/r_$k.sql", $scripts{$k});
	}
	my ($out, $err) = ('', '');
	my $secs = 12;
	my $h = IPC::Run::start(
		[
			'pgbench', '-h', $rnode->host, '-p', $rnode->port, '-n',
			'-c', '4', '-j', '2', '-T', $secs, '-M', 'simple',
			(map { ('-f', "$tmp/r_$_.sql") } sort keys %scripts), 'postgres'
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($secs + $cmd_timeout));

	my @configs = (
		"pgss_ng.max = 100\npgss_ng.track = all\npgss_ng.track_utility = off\npgss_ng.track_planning = on",
		"pgss_ng.max = 500\npgss_ng.track = none",
		"pgss_ng.max = 100\npgss_ng.track = top\npgss_ng.track_utility = on\npgss_ng.track_planning = off",
		"pgss_ng.max = 2000\npgss_ng.track = all\npgss_ng.track_planning = on",
		"pgss_ng.max = 150\npgss_ng.track = top\npgss_ng.track_utility = off",
	);
	my $nreload = 0;
	my $deadline = time() + $secs - 2;
	while (time() < $deadline)
	{
		$rnode->append_conf('postgresql.conf',
			$configs[ $nreload % @configs ] . "\n");
		$rnode->reload;
		$nreload++;
		$h->pump_nb;
		usleep(500_000);
	}
	# the last word: max = 100, tracking on
	$rnode->append_conf('postgresql.conf',
		"pgss_ng.max = 100\npgss_ng.track = top\npgss_ng.track_utility = on\n"
		  . "pgss_ng.track_planning = off\n");
	$rnode->reload;
	$h->finish;
	is($h->result(0), 0, "reload: pgbench exited with status 0 ($nreload reloads)")
	  or diag("stdout:\n$out\nstderr:\n$err");
	like($out, qr/^number of failed transactions: 0 /m,
		'reload: no failed transaction');
	unlike($err, qr/ERROR|FATAL|error:|aborted/, 'reload: no client error')
	  or diag($err);

	ok( $rnode->poll_query_until(
			'postgres', q{SELECT count(*) FROM pg_stat_activity
						  WHERE backend_type = 'client backend'
							AND pid <> pg_backend_pid()}, '0'),
		'reload: pgbench backends have exited');
	is( ok_psql(
			$rnode, 'SHOW pgss_ng.max; SELECT count(*) FROM w',
			'reload: a statement after the last reload'),
		"100\n0",
		'reload: new sessions see max = 100');
	my ($evicted, $entries, $alloc, $emax) = split /\|/,
	  info($rnode, 'entries_evicted, entries, entries_allocated, entries_max');
	note("reload: entries_evicted $evicted, entries $entries, allocated $alloc");
	is($emax, 100, 'reload: entries_max = 100');
	cmp_ok($entries, '<=', 100, 'reload: entries <= new max');
	is($alloc, $entries, 'reload: entries_allocated = entries');
	cmp_ok($evicted, '>', 0, 'reload: entries were evicted');

	# 6. Lowering max when only new statements follow.  601 entries under
	# max = 1000, then max = 100 (backstop 200), then 20 new statements,
	# each in a new session, and nothing else: no statement that has an
	# entry runs, so no flush of pending counts can evict; the creation
	# path must, or every new statement is refused by the backstop.
	$rnode->append_conf('postgresql.conf', "pgss_ng.max = 1000\n");
	$rnode->reload;
	ok(poll_untracked($rnode, 'SELECT entries_max FROM pgss_ng_info', '1000'),
		'lower max: new sessions see max = 1000');
	check($rnode, 'SELECT pgss_ng_reset()');
	ok_psql(
		$rnode, q{SELECT format('SELECT c%s, c%s FROM w', i, 50 + j)
				  FROM generate_series(1, 30) i, generate_series(1, 20) j
				  \gexec},
		'lower max: 600 distinct statements',
		extra => [ '-o', '/dev/null' ]);
	is(info($rnode, 'entries, entries_allocated'),
		'601|601', 'lower max: 601 entries under max = 1000');
	$rnode->append_conf('postgresql.conf', "pgss_ng.max = 100\n");
	$rnode->reload;
	ok(poll_untracked($rnode, 'SELECT entries_max FROM pgss_ng_info', '100'),
		'lower max: new sessions see max = 100');
	for my $i (1 .. 20)
	{
		ok_psql($rnode, "SELECT c$i, c@{[$i + 1]}, c@{[$i + 2]} FROM w",
			"lower max: new statement $i in a new session");
	}
	my ($e, $recorded) = split /\|/, check(
		$rnode, q{
		SELECT (SELECT entries FROM pgss_ng_info),
			   (SELECT count(*) FROM pgss_ng
				WHERE query LIKE 'SELECT c%, c%, c% FROM w')});
	note("lower max: entries $e, new statements recorded $recorded");
	cmp_ok($e, '<=', 100, 'lower max: entries <= 100 once new statements ran');
	is($recorded, 20, 'lower max: the 20 new statements are recorded');

	$rnode->stop;
	my $log = slurp_file($rnode->logfile);
	is(join("\n", grep { /$bad_log|terminated by signal/ } split /\n/, $log),
		'', 'reload: nothing bad in the server log');
}

done_testing();
