# 601_compat_settings_forms.pl
#
# pg_stat_statements' settings where a DBA coming from it has them, with
# only pgss_ng preloaded: each form contrib accepts is accepted, in the
# same contexts and with the same privileges, and takes effect as the
# pgss_ng setting of the same name does.
#
# - pg_settings: the five names have contrib's type, context, range,
#   values and default (compared with a server where contrib is preloaded
#   next to pgss_ng, which then owns them).
# - A session's SET of .track, .track_utility, .track_planning changes
#   what pgss_ng records; SHOW of either name tells the value in effect:
#   the one set last in the session; RESET of one shows the other's.
# - SET LOCAL, rolled back or committed; a function's SET clause, undone
#   at its exit, also when it fails; a SET inside such a function.
# - ALTER ROLE and ALTER DATABASE ... SET pg_stat_statements.track: in
#   effect at login, without a WARNING; the more specific level wins
#   (role over database, a session's SET over both).
# - PGOPTIONS='-c pg_stat_statements.track=none': the login works and
#   records nothing.
# - pg_dump --create | psql of a database with such a function and an
#   ALTER DATABASE ... SET: restored without error, the function runs and
#   its setting takes effect, and so does the database's.
# - An unprivileged role gets exactly contrib's answers (SET,
#   set_config(), SET LOCAL, CREATE FUNCTION ... SET, ALTER ROLE ... SET,
#   ALTER SYSTEM, PGOPTIONS), before and after GRANT SET ON PARAMETER;
#   .max and .save refuse a SET as contrib's do.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;

my $node = pgss_node('settings_forms', 'pgss_ng.track_planning' => 'off');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');

# "calls/plans/toplevel" of the entries whose text has $tag, summed; read
# untracked, and after every other backend has flushed (they are gone).
sub recorded
{
	my ($n, $db, $tag) = @_;
	local $ENV{PGOPTIONS} = '-c pgss_ng.track=none';
	return $n->safe_psql(
		$db, qq{
SELECT coalesce(sum(calls), 0) || '/' || coalesce(sum(plans), 0) || '/' ||
	   coalesce(string_agg(DISTINCT toplevel::text, ','), '-')
FROM pgss_ng WHERE query LIKE '%$tag%'});
}

# -- pg_settings: contrib's definitions ---------------------------------------

my $defs_sql = q{
SELECT string_agg(concat_ws('|', name, setting, unit, vartype, context,
							min_val, max_val, enumvals::text, boot_val,
							reset_val), E'\n' ORDER BY name)
FROM pg_settings WHERE name LIKE 'pg\_stat\_statements.%'};
my $ours = $node->safe_psql('postgres', $defs_sql);

my $contrib = pgss_node(
	'settings_forms_contrib',
	shared_preload_libraries => 'pg_stat_statements,pgss_ng');
for my $n ($node, $contrib)
{
	$n->safe_psql('postgres', 'CREATE ROLE alice LOGIN');
}
for my $n ($node, $contrib)
{
	$n->safe_psql('postgres',
		'CREATE SCHEMA alice AUTHORIZATION alice');
}
is($ours, $contrib->safe_psql('postgres', $defs_sql),
	'the five names: contrib\'s type, context, range, values and default');
like($ours, qr/^pg_stat_statements\.max\|5000\|integer\|postmaster\|100\|1073741823\|/m,
	'pg_stat_statements.max: postmaster, 100 .. INT_MAX / 2');

# -- a session ------------------------------------------------------------------

is( $node->safe_psql(
		'postgres', q{
SET pg_stat_statements.track = 'none';
SELECT 1 AS sess_none;
SHOW pgss_ng.track;
SET pg_stat_statements.track = 'top';
SET pg_stat_statements.track_utility = off;
SHOW pgss_ng.track_utility;
CREATE TEMP TABLE sess_util_off ();
SET pg_stat_statements.track_planning = on;
SELECT 1 AS sess_planned;
SET pgss_ng.track = 'none';
SHOW pg_stat_statements.track;
SET pg_stat_statements.track = 'all';
SHOW pgss_ng.track;
RESET pg_stat_statements.track;
SHOW pgss_ng.track;
RESET pgss_ng.track;
SHOW pgss_ng.track}),
	"1\nnone\noff\n1\nnone\nall\nnone\ntop",
	'SET of either name: SHOW of both tells the one set last; RESET of '
	  . 'one shows the other\'s');
is(recorded($node, 'postgres', 'sess\_none'), '0/0/-',
	'SET pg_stat_statements.track = none: not recorded');
is(recorded($node, 'postgres', 'sess\_util\_off'), '0/0/-',
	'SET pg_stat_statements.track_utility = off: not recorded');
is(recorded($node, 'postgres', 'sess\_planned'), '1/1/true',
	'SET pg_stat_statements.track_planning = on: planning recorded');

# -- SET LOCAL, function SET clauses ----------------------------------------------

$node->safe_psql(
	'postgres', q{
CREATE TABLE t (a int);
CREATE FUNCTION nested_all() RETURNS text LANGUAGE plpgsql
SET pg_stat_statements.track = 'all' AS $$
BEGIN
	PERFORM count(*) FROM t WHERE a = 101;
	RETURN current_setting('pgss_ng.track');
END $$;
CREATE FUNCTION nested_all_fails() RETURNS void LANGUAGE plpgsql
SET pg_stat_statements.track = 'all' AS $$
BEGIN
	RAISE EXCEPTION 'fails';
END $$;
CREATE FUNCTION sets_inside() RETURNS text LANGUAGE plpgsql
SET pg_stat_statements.track = 'all' AS $$
BEGIN
	SET pgss_ng.track = 'none';
	RETURN current_setting('pg_stat_statements.track');
END $$;});
is( $node->safe_psql(
		'postgres', q{
SELECT nested_all();
SHOW pg_stat_statements.track;
SHOW pgss_ng.track;
BEGIN;
SET LOCAL pg_stat_statements.track = 'none';
SHOW pgss_ng.track;
ROLLBACK;
SHOW pgss_ng.track;
BEGIN;
SET LOCAL pg_stat_statements.track = 'none';
COMMIT;
SHOW pgss_ng.track;
SET pgss_ng.track = 'top';
SELECT sets_inside();
SHOW pg_stat_statements.track;
RESET pgss_ng.track;}),
	"all\ntop\ntop\nnone\ntop\ntop\nnone\nnone",
	'SET LOCAL and a function\'s SET clause are undone at rollback, commit '
	  . 'and exit; a SET inside such a function outlives it');
my ($rc, $out, $err);
my $after_error = $node->safe_psql(
	'postgres', q{
DO $$ BEGIN PERFORM nested_all_fails(); EXCEPTION WHEN OTHERS THEN NULL; END $$;
SHOW pgss_ng.track});
is($after_error, 'top', 'a function\'s SET clause is undone when it fails');
is(recorded($node, 'postgres', 'a = $1'), '1/0/false',
	'SET pg_stat_statements.track = all in a function: its nested '
	  . 'statement is recorded');

# -- role, database, PGOPTIONS ----------------------------------------------------

$node->safe_psql(
	'postgres', q{
CREATE DATABASE db_none;
ALTER DATABASE db_none SET pg_stat_statements.track = 'none';
CREATE ROLE bob LOGIN;
ALTER ROLE bob SET pg_stat_statements.track = 'all';});
$node->safe_psql('db_none', 'CREATE EXTENSION pgss_ng');
($rc, $out, $err) = $node->psql('db_none',
	"SELECT 1 AS db_level; SHOW pgss_ng.track");
is("$rc|$out|$err", '0|1
none|', 'ALTER DATABASE ... SET pg_stat_statements.track: in effect at '
	  . 'login, no WARNING');
is(recorded($node, 'db_none', 'db\_level'), '0/0/-',
	'... and nothing is recorded there');
($rc, $out, $err) = $node->psql('db_none', 'SHOW pgss_ng.track',
	extra_params => [ '-U', 'bob' ]);
is("$rc|$out|$err", '0|all|', 'ALTER ROLE bob ... SET: the role\'s level wins over '
	  . 'the database\'s');
is( $node->safe_psql(
		'db_none', q{SET pgss_ng.track = 'top'; SHOW pg_stat_statements.track}),
	'top', 'a session\'s SET wins over both');
{
	local $ENV{PGOPTIONS} = '-c pg_stat_statements.track=none';
	($rc, $out, $err) = $node->psql('postgres',
		'SELECT 1 AS client_level; SHOW pgss_ng.track');
}
is("$rc|$out|$err", '0|1
none|',
	'PGOPTIONS=\'-c pg_stat_statements.track=none\': the login works');
is(recorded($node, 'postgres', 'client\_level'), '0/0/-',
	'... and records nothing');

# -- pg_dump | psql ---------------------------------------------------------------

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql(
	'src', q{
CREATE EXTENSION pgss_ng;
CREATE TABLE u (b int);
CREATE FUNCTION dumped() RETURNS text LANGUAGE plpgsql
SET pg_stat_statements.track = 'all' AS $$
BEGIN
	PERFORM count(*) FROM u WHERE b = 202;
	RETURN current_setting('pgss_ng.track');
END $$;
ALTER DATABASE src SET pg_stat_statements.track_planning = on;});
my $dump = PostgreSQL::Test::Utils::tempdir() . '/src.sql';
$node->command_ok(
	[ 'pg_dump', '--create', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump --create of a database with such settings');
$node->safe_psql('postgres', 'DROP DATABASE src');
($rc, $out, $err) = $node->psql('postgres', undef,
	extra_params => [ '-v', 'ON_ERROR_STOP=1', '-f', $dump ]);
is("$rc|" . ($err =~ /ERROR|WARNING/ ? $err : ''), '0|',
	'psql restores it without an error or a WARNING');
is( $node->safe_psql(
		'src', q{SELECT dumped(); SHOW pgss_ng.track_planning;
SELECT 1 AS restored_planned}),
	"all\non\n1",
	'the restored function runs with its setting in effect, and the '
	  . 'restored database\'s setting is in effect');
is(recorded($node, 'src', 'b = $1'), '1/1/false',
	'the restored function\'s setting takes effect');
is(recorded($node, 'src', 'restored\_planned'), '1/1/true',
	'the restored database\'s setting takes effect');

# -- privileges: the same as contrib's -------------------------------------------

my @as_alice = (
	q{SET pg_stat_statements.track = 'none'},
	q{SET LOCAL pg_stat_statements.track_utility = off},
	q{SELECT set_config('pg_stat_statements.track_planning', 'on', false)},
	q{CREATE FUNCTION alice_f() RETURNS int LANGUAGE sql
	  SET pg_stat_statements.track = 'none' AS 'SELECT 1'},
	q{ALTER ROLE alice SET pg_stat_statements.track = 'none'},
	q{ALTER SYSTEM SET pg_stat_statements.track = 'none'},
	q{SET pg_stat_statements.max = 200},
	q{SET pg_stat_statements.save = off},
	q{SET pg_stat_statements.track = 'bogus'});
sub answers
{
	my ($n) = @_;
	my @a;
	for my $sql (@as_alice)
	{
		my ($r, $o, $e) = $n->psql('postgres', $sql,
			extra_params => [ '-U', 'alice' ]);
		$e =~ s/^psql:<stdin>:\d+: //mg;
		push @a, "$sql => $r: $e";
	}
	local $ENV{PGOPTIONS} = '-c pg_stat_statements.track=none';
	my ($r, $o, $e) = $n->psql('postgres', 'SELECT 1',
		extra_params => [ '-U', 'alice' ]);
	$e =~ s/^.*(FATAL:)/$1/m;
	push @a, "PGOPTIONS => $r: $e";
	return join("\n", @a);
}
my $ours_refused = answers($node);
like($ours_refused,
	qr/SET pg_stat_statements.track = 'none' => 3: ERROR:  permission denied to set parameter "pg_stat_statements.track"/,
	'alice may not SET pg_stat_statements.track');
is($ours_refused, answers($contrib),
	'alice gets exactly contrib\'s answers');
for my $n ($node, $contrib)
{
	$n->safe_psql('postgres',
		'GRANT SET ON PARAMETER pg_stat_statements.track TO alice');
}
my $ours_granted = answers($node);
like($ours_granted,
	qr/SET pg_stat_statements.track = 'none' => 0: $/m,
	'after GRANT SET ON PARAMETER alice may SET pg_stat_statements.track');
is($ours_granted, answers($contrib),
	'after GRANT SET ON PARAMETER: exactly contrib\'s answers');

unlike(slurp_file($node->logfile), qr/pg_stat_statements\.[a-z_]+" cannot be set/,
	'no "cannot be set" in the log');
$contrib->stop;
$node->stop;
done_testing();
