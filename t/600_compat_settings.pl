# 600_compat_settings.pl
#
# pg_stat_statements' settings for the tools that read them from
# pg_settings and for the lines a DBA leaves in postgresql.conf: with only
# pgss_ng preloaded, pgss_ng defines pg_stat_statements.max, .track,
# .track_utility, .track_planning and .save as contrib does, and each sets
# the pgss_ng setting of the same name (the forms a session, a function,
# a role or a database uses: t/601_compat_settings_forms.pl).
#
# - pgss_ng only, with non-default pgss_ng settings and a DBA's leftover
#   pg_stat_statements.track and .max lines in postgresql.conf: the server
#   starts without a WARNING; at the same level (the file) pgss_ng's own
#   settings are in effect, and pg_settings shows them under both names,
#   with contrib's contexts (.max postmaster).
# - Always equal: a session's SET pgss_ng.track shows in that session's
#   pg_stat_statements.track (SHOW, current_setting(), pg_settings), and a
#   reload of pgss_ng.max in pg_stat_statements.max.
# - A leftover line alone is in effect: without pgss_ng.save,
#   pg_stat_statements.save = off turns saving off (nothing is restored
#   after a restart); without pgss_ng.max, pg_stat_statements.max is the
#   max published; a reload that changes it only logs that a restart is
#   needed, as contrib's does.
# - With pg_stat_statements preloaded as well, first or last: the server
#   starts, the settings are contrib's own (its values from the file,
#   settable), pgss_ng's alone are in effect for pgss_ng.
# - Without pgss_ng preloaded: no such setting; CREATE EXTENSION
#   pgss_ng_compat CASCADE works, reading its view raises pgss_ng's "must
#   be loaded" error.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;

my $mirrors_sql = q{
SELECT name, setting, vartype, context FROM pg_settings
WHERE name LIKE 'pg\_stat\_statements.%' ORDER BY name};

my $node = pgss_node(
	'compat_settings',
	'pgss_ng.max' => 1234,
	'pgss_ng.track' => 'all',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'on',
	'pgss_ng.save' => 'off',
	# left over from pg_stat_statements
	'pg_stat_statements.track' => 'top',
	'pg_stat_statements.max' => 9999);

# -- the settings ------------------------------------------------------------

is($node->safe_psql('postgres', $mirrors_sql),
	join("\n",
		'pg_stat_statements.max|1234|integer|postmaster',
		'pg_stat_statements.save|off|bool|sighup',
		'pg_stat_statements.track|all|enum|superuser',
		'pg_stat_statements.track_planning|on|bool|superuser',
		'pg_stat_statements.track_utility|off|bool|superuser'),
	'pgss_ng only: the five names show pgss_ng\'s settings, which win '
	  . 'over the leftover lines in the same file, with contrib\'s contexts');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_settings m
JOIN pg_settings n ON n.name = 'pgss_ng.' || split_part(m.name, '.', 2)
WHERE m.name LIKE 'pg\_stat\_statements.%'
  AND (m.setting, m.vartype, m.enumvals)
      IS NOT DISTINCT FROM (n.setting, n.vartype, n.enumvals)}),
	'5',
	'each name has the setting, type and values of its pgss_ng GUC');

my $log = slurp_file($node->logfile);
unlike($log, qr/WARNING|cannot be set/,
	'start: no WARNING for the leftover lines');

# -- always equal -----------------------------------------------------------

is( $node->safe_psql(
		'postgres', q{
SET pgss_ng.track = top;
SHOW pg_stat_statements.track;
SELECT current_setting('pg_stat_statements.track');
SELECT setting FROM pg_settings WHERE name = 'pg_stat_statements.track';
RESET pgss_ng.track;
SHOW pg_stat_statements.track}),
	"top\ntop\ntop\nall",
	'SET pgss_ng.track shows in pg_stat_statements.track, RESET too');

my $pos = -s $node->logfile;
$node->safe_psql('postgres',
	'ALTER SYSTEM SET pgss_ng.max = 2000; SELECT pg_reload_conf()');
ok( $node->poll_query_until(
		'postgres', 'SHOW pg_stat_statements.max', '2000'),
	'a reload of pgss_ng.max shows in pg_stat_statements.max');
is($node->safe_psql('postgres', 'SHOW pgss_ng.max'), '2000',
	'pgss_ng.max is 2000');
unlike(slurp_file($node->logfile, $pos), qr/contains errors|cannot be set/,
	'reload: the leftover lines are no errors');

# -- a leftover line alone ----------------------------------------------------

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET pgss_ng.max');
$node->adjust_conf('postgresql.conf', 'pgss_ng.max', undef);
$node->adjust_conf('postgresql.conf', 'pgss_ng.save', undef);
$node->append_conf('postgresql.conf', 'pg_stat_statements.save = off');
$node->restart;
is( $node->safe_psql(
		'postgres', q{
SELECT entries_max FROM pgss_ng_info;
SHOW pgss_ng.max;
SHOW pgss_ng.save}),
	"9999\n9999\noff",
	'alone in the file, pg_stat_statements.max and .save are in effect');
$node->safe_psql('postgres', 'SELECT 1 AS before_restart');
$node->restart;
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM pgss_ng WHERE query LIKE '%before\_restart%'}),
	'0', 'pg_stat_statements.save = off: nothing was saved');
$pos = -s $node->logfile;
$node->adjust_conf('postgresql.conf', 'pg_stat_statements.max', 3000);
$node->reload;
ok( $node->wait_for_log(
		qr/LOG:  parameter "pg_stat_statements\.max" cannot be changed without restarting the server/,
		$pos),
	'a reload that changes pg_stat_statements.max: restart needed, as '
	  . 'with contrib');
is($node->safe_psql('postgres', 'SELECT entries_max FROM pgss_ng_info'),
	'9999', '... and max stays');
$node->adjust_conf('postgresql.conf', 'pg_stat_statements.max', 9999);
$node->adjust_conf('postgresql.conf', 'pg_stat_statements.save', undef);
$node->append_conf('postgresql.conf', "pgss_ng.max = 2000\npgss_ng.save = off");

# -- next to pg_stat_statements, in either order ------------------------------

for my $spl ('pg_stat_statements,pgss_ng', 'pgss_ng,pg_stat_statements')
{
	$node->adjust_conf('postgresql.conf', 'shared_preload_libraries',
		"'$spl'");
	$pos = -s $node->logfile;
	$node->restart;
	is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
		$spl, "$spl: the server started");
	is( $node->safe_psql(
			'postgres', q{
SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
WHERE name IN ('pg_stat_statements.max', 'pg_stat_statements.track',
			   'pgss_ng.max', 'pgss_ng.track')}),
		'pg_stat_statements.max=9999 pg_stat_statements.track=top '
		  . 'pgss_ng.max=2000 pgss_ng.track=all',
		"$spl: pg_stat_statements' settings are its own, from the file");
	is( $node->safe_psql(
			'postgres',
			"SET pg_stat_statements.track = 'none'; SHOW pg_stat_statements.track; SHOW pgss_ng.track"
		),
		"none\nall",
		"$spl: pg_stat_statements.track can be set, and is not pgss_ng's");
	unlike(slurp_file($node->logfile, $pos), qr/cannot be set|redefine/,
		"$spl: no mirror was defined");
}
$node->stop;

# -- pgss_ng not preloaded ------------------------------------------------------

my $bare = pgss_node('compat_not_preloaded', shared_preload_libraries => '');
is( $bare->safe_psql(
		'postgres',
		q{SELECT count(*) FROM pg_settings
		  WHERE name LIKE 'pg\_stat\_statements.%' OR name LIKE 'pgss\_ng.%'}),
	'0', 'not preloaded: no pgss_ng GUC, no mirror');
$bare->safe_psql('postgres', 'CREATE EXTENSION pgss_ng_compat CASCADE');
my ($rc, $out, $err) =
  $bare->psql('postgres', 'SELECT count(*) FROM pg_stat_statements');
like($err,
	qr/ERROR:  pgss_ng must be loaded via "shared_preload_libraries"/,
	'not preloaded: the compat view raises pgss_ng\'s error');
$bare->stop;

done_testing();
