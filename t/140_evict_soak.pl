# Soak: sixteen concurrent clients for a bounded time (60 s of load by
# default; PGSS_NG_SOAK_SECONDS sets another duration), with pgss_ng.max =
# 200 so that eviction runs all the time.
#
#   - 6 "hot" clients (role hot): two pgbench runs for the whole duration,
#     one in simple mode (a BEGIN/UPDATE/INSERT/COMMIT script and a SELECT
#     script), one in prepared mode (a SELECT script and an UPDATE script),
#     3 clients each.  pgbench reports how many times each script ran; the
#     tables count the executions of the writing statements independently.
#   - 7 churn clients (role churner): psql batches of statements of random
#     distinct shapes (plain, with constants, and utility), far past max.
#     A finished or terminated batch is replaced by a new connection.
#   - a resetter: every 2 s one of pgss_ng_reset(userid => churner),
#     pgss_ng_reset(userid => churner, queryid => <a churn statement>) and
#     pgss_ng_reset(minmax_only => true); it never resets a hot count.
#   - a reader: reads the whole view (with texts) and pgss_ng_info about
#     ten times a second.
#   - a terminator: every 1.5 s pg_terminate_backend() of a random churn
#     backend (never a hot one).  The backend it picked may exit on its own
#     before the call (its batch ended, or it was terminated before): the
#     call then warns "PID N is not a PostgreSQL backend process" and
#     returns false.  That warning, for the PID just picked, with that
#     result, and that PID gone from pg_stat_activity afterwards, is the
#     only message the terminator may get.
#   - a failer (role failer, its ERRORs kept out of the server log): one
#     psql session that runs a statement failing with division by zero
#     100 times at the start of the load.
#
# Asserts: the server never restarted nor crash-restarted (postmaster.pid
# unchanged; pgss_ng_info.stats_reset unchanged, as there is no full reset;
# no "terminated by signal", "was terminated", crash reinitialization, TRAP
# or pgss_ng error line in the server log); no client saw an ERROR other
# than the churn clients' termination by the terminator; in every sample,
# entries_allocated <= max + min(max, 20000) = 400, qtext_bytes <=
# qtext_limit_bytes, no visible row without a planning, execution or
# failure and no row without its text (the arena is far from full); after
# the load, once every client backend has exited: the failer's statement
# has exactly its 100 failures (errors) and no call; each hot statement is
# there exactly once,
# created before the load (never evicted nor reset), with calls and rows
# exactly equal to its executions; every dropped body was freed
# (entries_allocated = entries); entries were evicted; after one more
# statement end, entries <= max.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;
use IPC::Run;
use Time::HiRes qw(time usleep);

my $secs = $ENV{PGSS_NG_SOAK_SECONDS} // 60;
die "PGSS_NG_SOAK_SECONDS must be a positive integer"
  unless $secs =~ /^\d+$/ && $secs > 0;
my $max = 200;
my $backstop = $max + ($max < 20000 ? $max : 20000);
my $nchurn = 7;
my $churn_batch = 1500;    # statements per churn connection

my $node = pgss_node(
	'soak',
	'pgss_ng.max' => $max,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'on',
	'pgss_ng.track_planning' => 'on',
	'pgss_ng.save' => 'off',
	max_connections => 40,
	log_line_prefix => '%m [%p] %u ');

sub postmaster_pid
{
	my $f = $node->data_dir . '/postmaster.pid';
	open(my $fh, '<', $f) or die "cannot read $f: $!";
	my $pid = <$fh>;
	close($fh);
	chomp $pid;
	return $pid;
}
my $pm_pid = postmaster_pid();

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE hot LOGIN;
CREATE ROLE churner LOGIN;
CREATE ROLE failer LOGIN;
ALTER ROLE failer SET log_min_messages = fatal;
CREATE TABLE hot_t (id int PRIMARY KEY, v bigint NOT NULL DEFAULT 0);
INSERT INTO hot_t (id) SELECT generate_series(1, 100);
CREATE TABLE hot_u (id int PRIMARY KEY, v bigint NOT NULL DEFAULT 0);
INSERT INTO hot_u (id) SELECT generate_series(1, 100);
CREATE TABLE hot_log (cid int NOT NULL);
GRANT SELECT, UPDATE ON hot_t, hot_u TO hot;
GRANT INSERT, SELECT ON hot_log TO hot;
SELECT format('CREATE TABLE w (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, 100) i \gexec
GRANT SELECT ON w TO churner;
});
my $churner_oid =
  $node->safe_psql('postgres', q{SELECT 'churner'::regrole::oid});
my $hot_oid = $node->safe_psql('postgres', q{SELECT 'hot'::regrole::oid});
my $failer_oid =
  $node->safe_psql('postgres', q{SELECT 'failer'::regrole::oid});
my $nfail = 100;

my $stats_reset =
  $node->safe_psql('postgres', 'SELECT stats_reset FROM pgss_ng_info');

# ------------------------------------------------------------ scripts
my $tmp = PostgreSQL::Test::Utils::tempdir();
my %script = (
	h1_tx => q{\set id random(1, 100)
BEGIN;
UPDATE hot_t SET v = v + 1 WHERE id = :id;
INSERT INTO hot_log (cid) VALUES (:client_id);
COMMIT;
},
	h1_sel => q{\set id random(1, 100)
SELECT count(*) FROM hot_t WHERE id = :id;
},
	h2_sel => q{\set id random(1, 100)
SELECT v FROM hot_t WHERE id = :id AND v >= -1;
},
	h2_upd => q{\set id random(1, 100)
UPDATE hot_u SET v = v + 1 WHERE id = :id;
},);
for my $s (keys %script)
{
	PostgreSQL::Test::Utils::append_to_file("$tmp/$s.sql", $script{$s});
}

# Churn: one batch of statements of random shapes, each a new entry with
# high probability (about 10^6 shapes per kind).
PostgreSQL::Test::Utils::append_to_file(
	"$tmp/churn.sql", qq{
SELECT CASE i % 4
		 WHEN 0 THEN format('SELECT c%s, c%s, c%s FROM w', a, b, c)
		 WHEN 1 THEN format('SELECT c%s FROM w WHERE c%s = %s AND c%s < 7', a, b, i, c)
		 WHEN 2 THEN format('SELECT count(c%s) + sum(c%s) FROM w GROUP BY c%s', a, b, c)
		 ELSE format('SET work_mem = %L', (64 + a * 10000 + b * 100 + c) || 'kB')
	   END
FROM (SELECT i, 1 + floor(random() * 100)::int AS a,
			 1 + floor(random() * 100)::int AS b,
			 1 + floor(random() * 100)::int AS c
	  FROM generate_series(1, $churn_batch) i) s \\gexec
});

my @conn = ('-h', $node->host, '-p', $node->port);
my $psql = $node->installed_command('psql');
my $hard_timeout = $secs + 300;

# ------------------------------------------------------------ hot load
my (%pgb_out, %pgb_err, %pgb);
for my $run ([ 'h1', 'simple', 'h1_tx', 'h1_sel' ],
	[ 'h2', 'prepared', 'h2_sel', 'h2_upd' ])
{
	my ($name, $mode, @scripts) = @$run;
	($pgb_out{$name}, $pgb_err{$name}) = ('', '');
	$pgb{$name} = IPC::Run::start(
		[
			'pgbench', @conn, '-U', 'hot', '-n', '-c', '3', '-j', '1',
			'-T', $secs + 2, '-M', $mode,
			(map { ('-f', "$tmp/$_.sql") } @scripts), 'postgres'
		],
		'<', \undef, '>', \$pgb_out{$name}, '2>', \$pgb_err{$name},
		IPC::Run::timeout($hard_timeout));
}

# The hot entries exist (and have been counted into) before churn starts,
# so the backstop never refuses to create one.
ok( $node->poll_query_until(
		'postgres', qq{
		SELECT count(*) FROM pgss_ng WHERE userid = $hot_oid AND calls > 0},
		'7'),
	'the seven hot statements are tracked before the churn starts');
# When each hot entry was made: an entry evicted or reset and made again
# would have a later stats_since.
my $hot_since_sql = qq{
	SELECT queryid, stats_since FROM pgss_ng WHERE userid = $hot_oid
	ORDER BY queryid};
my $hot_since = $node->safe_psql('postgres', $hot_since_sql);

# ------------------------------------------------------------ failer
# 100 failures in a row: its entry's value for eviction (one use per
# failure) keeps it far above the churn's, like the hot statements.
PostgreSQL::Test::Utils::append_to_file("$tmp/fail.sql",
	"SELECT 1 / 0 AS soak_fail;\n" x $nfail);
my ($fail_out, $fail_err) = ('', '');
my $failer = IPC::Run::start(
	[
		$psql, '-X', '-q', '-v', 'ON_ERROR_STOP=0', '-f', "$tmp/fail.sql",
		'-d', $node->connstr('postgres') . ' user=failer'
	],
	'<', \undef, '>', \$fail_out, '2>', \$fail_err,
	IPC::Run::timeout($hard_timeout));

# ------------------------------------------------------------ the rest
my @churn_h;
my @churn_err;
my $churn_started = 0;
my $churn_terminated = 0;
my @churn_bad;

sub start_churn
{
	my ($c) = @_;
	$churn_err[$c] = '';
	$churn_h[$c] = IPC::Run::start(
		[
			$psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-o', '/dev/null',
			'-f', "$tmp/churn.sql",
			'-d', $node->connstr('postgres') . " user=churner application_name=churn$c"
		],
		'<', \undef, '>', '/dev/null', '2>', \$churn_err[$c],
		IPC::Run::timeout($hard_timeout));
	$churn_started++;
}

# What a churn client may see when the terminator ends its backend.
my $termination_noise = qr/
	FATAL:\s+terminating\ connection\ due\ to\ administrator\ command
  | server\ closed\ the\ connection\ unexpectedly
  | This\ probably\ means\ the\ server\ terminated\ abnormally
  | before\ or\ while\ processing\ the\ request
  | connection\ to\ server\ was\ lost
  | no\ connection\ to\ the\ server
  # PostgreSQL 18 reports the position of a FATAL that interrupts parse
  # analysis: psql then prints the statement line and a caret under it
  | ^LINE\ \d+:\ 
  | ^\s*\^\s*$
/x;

sub finish_churn
{
	my ($c) = @_;
	$churn_h[$c]->finish;
	my $rc = $churn_h[$c]->result(0);
	my @lines = grep { /\S/ } split /\n/, $churn_err[$c];
	my @other = grep { !/$termination_noise/ } @lines;
	if ($rc == 0 && !@lines)
	{
		return;
	}
	if (@lines && !@other && $churn_err[$c] =~ /administrator command/)
	{
		$churn_terminated++;
		return;
	}
	push @churn_bad, "churn client $c (exit $rc): $churn_err[$c]";
}

start_churn($_) for 0 .. $nchurn - 1;

my %bg_params = (timeout => $hard_timeout);
my $reader = $node->background_psql('postgres', %bg_params);
my $resetter = $node->background_psql('postgres', %bg_params);
my $terminator = $node->background_psql('postgres', %bg_params);

my ($nresets, $nterms, $nsamples) = (0, 0, 0);
my ($max_alloc, $max_entries, $max_qtext) = (0, 0, 0);
my @sample_bad;
my @session_errors;

# Run a query in a background session; an error is remembered, not fatal.
# $benign, if given, is called with the query's output and its stderr and
# returns true when that stderr is an expected race, not an error.
sub bg_query
{
	my ($session, $name, $sql, $benign) = @_;
	my ($out, $err) = $session->query($sql);
	if ($err)
	{
		my $stderr = $session->{stderr};
		$session->{stderr} = '';
		push @session_errors, "$name: $stderr"
		  unless $benign && $benign->($out, $stderr);
	}
	return $out;
}

# The terminator picks a churn backend and terminates it in one statement,
# which returns "<pid>|<pg_terminate_backend's result>".  Between the pick
# and the call that backend may exit on its own; pg_terminate_backend()
# then warns and returns false.  Only exactly that is benign: a single
# WARNING line about the PID just picked, a false result, and that PID no
# longer a backend (not in pg_stat_activity, checked by the same session
# afterwards: a backend leaves pg_stat_activity before the process array,
# so one that pg_terminate_backend() did not find is no longer listed).
# Anything else on stderr, including the same warning about any other PID,
# stays an error.
my $term_sql = q{
	SELECT pid, pg_terminate_backend(pid)
	FROM (SELECT pid FROM pg_stat_activity
		  WHERE usename = 'churner'
			AND backend_type = 'client backend'
		  ORDER BY random() LIMIT 1) s};
my $nterm_races = 0;

sub terminator_race_only
{
	my ($session, $out, $stderr) = @_;
	return 0 unless defined $out && $out =~ /^(\d+)\|f$/;
	my $pid = $1;
	my @lines = grep { /\S/ } split /\n/, $stderr;
	return 0
	  unless @lines == 1
	  && $lines[0] =~
	  /^(?:psql:[^:]*:\d+: )?WARNING:  PID $pid is not a PostgreSQL backend process$/;
	my ($gone, $err) = $session->query(
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid");
	if ($err)
	{
		push @session_errors, "terminator: $session->{stderr}";
		$session->{stderr} = '';
		return 0;
	}
	return 0 if $gone ne 't';
	$nterm_races++;
	return 1;
}

# The filter against the server's real message: a PID that is no backend
# (this test script's own) gets the warning; the filter must accept it only
# when that PID is the one picked, so a warning about another PID, or any
# other message, still fails "reader, resetter and terminator saw no error".
{
	my ($out, $err) =
	  $terminator->query("SELECT $$, pg_terminate_backend($$)");
	my $warning = $terminator->{stderr};
	$terminator->{stderr} = '';
	is("$out $err", "$$|f 1",
		'self-check: pg_terminate_backend() of a non-backend PID warns and '
		  . 'returns false');
	ok(terminator_race_only($terminator, $out, $warning),
		'self-check: that warning for the PID just picked is accepted');
	my $other = $$ + 1;
	ok( !terminator_race_only($terminator, "$other|f", $warning),
		'self-check: the same warning for another picked PID is an error');
	ok( !terminator_race_only(
			$terminator, $out, "$warning\nERROR:  something else\n"),
		'self-check: any other line next to it is an error');
	ok(!terminator_race_only($terminator, "$$|t", $warning),
		'self-check: the warning with a true result is an error');
	$nterm_races = 0;
}

my $deadline = time() + $secs;
my ($next_reset, $next_term) = (time() + 2, time() + 1.5);
while (time() < $deadline)
{
	for my $c (0 .. $nchurn - 1)
	{
		$churn_h[$c]->pump_nb if $churn_h[$c]->pumpable;
		next if $churn_h[$c]->pumpable;
		finish_churn($c);
		start_churn($c);
	}
	$pgb{$_}->pump_nb for grep { $pgb{$_}->pumpable } keys %pgb;

	# reader: the whole view, texts included, and the info counters
	my $s = bg_query(
		$reader, 'reader', q{
		SELECT i.entries_allocated, i.entries, i.qtext_bytes,
			   i.qtext_limit_bytes, v.nrows, v.nothing, v.notext
		FROM pgss_ng_info i,
			 (SELECT count(*) AS nrows,
					 count(*) FILTER (WHERE plans + calls + errors = 0)
					   AS nothing,
					 count(*) FILTER (WHERE query IS NULL) AS notext
			  FROM (SELECT * FROM pgss_ng) p) v});
	if (defined $s && $s =~ /^(\d+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)$/)
	{
		my ($alloc, $live, $qb, $ql, $nrows, $nothing, $notext) =
		  ($1, $2, $3, $4, $5, $6, $7);
		$nsamples++;
		$max_alloc = $alloc if $alloc > $max_alloc;
		$max_entries = $live if $live > $max_entries;
		$max_qtext = $qb if $qb > $max_qtext;
		push @sample_bad, "entries_allocated $alloc > $backstop"
		  if $alloc > $backstop;
		push @sample_bad, "qtext_bytes $qb > qtext_limit_bytes $ql"
		  if $qb > $ql;
		push @sample_bad,
		  "$nothing visible rows with no plan, call nor failure"
		  if $nothing != 0;
		push @sample_bad, "$notext rows without query text" if $notext != 0;
	}
	else
	{
		push @sample_bad, "unexpected sample: " . ($s // 'undef');
	}

	if (time() >= $next_reset)
	{
		my $form = $nresets % 3;
		my $sql =
			$form == 0 ? "SELECT pgss_ng_reset(userid => $churner_oid)"
		  : $form == 1 ? qq{SELECT count(pgss_ng_reset(userid => $churner_oid,
											   queryid => queryid))
							FROM (SELECT queryid FROM pgss_ng
								  WHERE userid = $churner_oid LIMIT 5) q}
		  : 'SELECT pgss_ng_reset(minmax_only => true)';
		bg_query($resetter, 'resetter', $sql);
		$nresets++;
		$next_reset = time() + 2;
	}

	if (time() >= $next_term)
	{
		my $r = bg_query($terminator, 'terminator', $term_sql,
			sub { terminator_race_only($terminator, @_) });
		$nterms++ if defined $r && $r =~ /^\d+\|t$/;
		$next_term = time() + 1.5;
	}

	usleep(100_000);
}

# ------------------------------------------------------------ wind down
for my $c (0 .. $nchurn - 1)
{
	finish_churn($c);
}
$_->quit for ($reader, $resetter, $terminator);
$failer->finish;
is(scalar(() = $fail_err =~ /ERROR:  division by zero/g),
	$nfail, "the failer's statement failed $nfail times");

my %count;    # executions of each hot script
for my $name (sort keys %pgb)
{
	$pgb{$name}->finish;
	is($pgb{$name}->result(0), 0, "pgbench $name exited with status 0")
	  or diag("stdout:\n$pgb_out{$name}\nstderr:\n$pgb_err{$name}");
	unlike($pgb_err{$name}, qr/ERROR|FATAL|error:|aborted/,
		"pgbench $name: no client saw an error")
	  or diag($pgb_err{$name});
	like($pgb_out{$name}, qr/^number of failed transactions: 0 /m,
		"pgbench $name: no failed transaction");
	while ($pgb_out{$name} =~
		/^SQL script \d+: \S*\/(\w+)\.sql\n - weight: \d+ [^\n]*\n - (\d+) transactions /mg)
	{
		$count{$1} = $2;
	}
	note($pgb_out{$name});
}
for my $s (sort keys %script)
{
	ok(defined $count{$s} && $count{$s} > 0, "pgbench ran script $s")
	  or diag(join("\n", values %pgb_out));
	$count{$s} //= -1;
}

is(join("\n", @churn_bad), '',
	'churn clients saw no error other than their termination');
is(join("\n", @session_errors), '',
	'reader, resetter and terminator saw no error');
note("churn connections: $churn_started, terminated: $churn_terminated; "
	  . "terminations requested: $nterms (picked backend already gone: "
	  . "$nterm_races); resets: $nresets; "
	  . "samples: $nsamples (max entries_allocated $max_alloc, "
	  . "max entries $max_entries, max qtext_bytes $max_qtext)");
cmp_ok($nterms, '>', 0, 'the terminator ended churn backends');
cmp_ok($churn_terminated, '>', 0, 'churn clients saw their termination');
cmp_ok($nresets, '>=', 3, 'the resetter ran each kind of reset');
cmp_ok($nsamples, '>', 0, 'the reader sampled pgss_ng_info and the view');
is(join("\n", @sample_bad), '',
	"every sample: entries_allocated <= $backstop, qtext_bytes <= limit, "
	  . 'rows with calls and text');
cmp_ok($max_entries, '>=', $max - $max * 5 / 100,
	'the table was full while sampled');

# Every client backend flushes at exit; wait until they are gone.
wait_for_clients_gone($node, 'all client backends have exited');

is( $node->safe_psql(
		'postgres', qq{
		SELECT calls || ' ' || errors FROM pgss_ng
		WHERE userid = $failer_oid AND query = 'SELECT \$1 / \$2 AS soak_fail'}),
	"0 $nfail", "the failer's statement: $nfail errors, no call");

# The tables count the writing statements' executions independently of
# pgbench.
is( $node->safe_psql(
		'postgres', q{
		SELECT (SELECT sum(v) FROM hot_t) || ' ' ||
			   (SELECT count(*) FROM hot_log) || ' ' ||
			   (SELECT sum(v) FROM hot_u)}),
	"$count{h1_tx} $count{h1_tx} $count{h2_upd}",
	'table side effects equal the scripts pgbench counted');

# The hot statements: the only entries of role hot, each made before the
# churn started and never since (not evicted, not reset), with calls and
# rows exactly equal to its executions.
is($node->safe_psql('postgres', $hot_since_sql), $hot_since,
	'hot entries: same stats_since as before the churn (never made again)');
my @expected = (
	[ 'BEGIN', $count{h1_tx}, 0 ],
	[ 'COMMIT', $count{h1_tx}, 0 ],
	[ 'INSERT INTO hot_log (cid) VALUES ($1)', $count{h1_tx}, $count{h1_tx} ],
	[ 'SELECT count(*) FROM hot_t WHERE id = $1', $count{h1_sel}, $count{h1_sel} ],
	[ 'SELECT v FROM hot_t WHERE id = $1 AND v >= $2', $count{h2_sel}, $count{h2_sel} ],
	[ 'UPDATE hot_t SET v = v + $1 WHERE id = $2', $count{h1_tx}, $count{h1_tx} ],
	[ 'UPDATE hot_u SET v = v + $2 WHERE id = $1', $count{h2_upd}, $count{h2_upd} ],
);
my $want = join("\n", map { join('|', @$_) } @expected);
my $got = $node->safe_psql(
	'postgres', qq{
	SELECT query, calls, rows
	FROM pgss_ng WHERE userid = $hot_oid ORDER BY query COLLATE "C"});
is($got, $want, 'hot statements: calls and rows exact');

# Time histograms: never more than the calls; exactly the calls in every
# entry whose min/max (and histograms) were never reset.  The hot entries
# were, by the resetter's minmax_only resets.
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) > 0, count(*) FILTER (WHERE minmax_stats_since = stats_since) > 0,
		   count(*) FILTER (WHERE h > calls),
		   count(*) FILTER (WHERE minmax_stats_since = stats_since AND h <> calls)
	FROM (SELECT calls, stats_since, minmax_stats_since,
				 (SELECT coalesce(sum(count), 0)
				  FROM pgss_ng_exec_time_histogram(p.userid, p.dbid, p.queryid,
												   p.toplevel)) AS h
		  FROM pgss_ng p) s}),
	't|t|0|0',
	'histograms: sum(count) <= calls, = calls where min/max were never reset');
if ($got ne $want)
{
	diag($node->safe_psql('postgres', 'SELECT * FROM pgss_ng_info'));
}

my ($dealloc, $entries, $alloc, $skips, $dropped, $sr) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT dealloc, entries, entries_allocated, backstop_skips, dropped,
			stats_reset FROM pgss_ng_info');
note("dealloc $dealloc, entries $entries, entries_allocated $alloc, "
	  . "backstop_skips $skips, dropped $dropped");
cmp_ok($dealloc, '>', 0, 'entries were evicted (dealloc > 0)');
is($alloc, $entries,
	'every dropped body was freed (entries_allocated = entries)');
is($sr, $stats_reset,
	'stats_reset unchanged: no full reset, no shared memory reinitialization');

$node->safe_psql('postgres', 'SELECT 1');
cmp_ok($node->safe_psql('postgres', 'SELECT entries FROM pgss_ng_info'),
	'<=', $max, "entries <= $max after the next statement end");

is(postmaster_pid(), $pm_pid, 'postmaster pid unchanged');
$node->stop;

# The server log: no crash, no failed assertion, no error caught by pgss_ng.
my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile);
my @bad = grep {
	/terminated by signal|server process .* was terminated|all server processes terminated|TRAP:|PANIC:|pgss_ng could not/
} split /\n/, $log;
is(join("\n", @bad), '', 'server log: no crash, TRAP or pgss_ng error');
my @errors = grep { /\bERROR:/ } split /\n/, $log;
is(join("\n", @errors), '', 'server log: no ERROR');

done_testing();
