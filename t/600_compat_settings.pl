# 600_compat_settings.pl
#
# pg_stat_statements' settings for the tools that read them from
# pg_settings (issue 21): with only pgss_ng preloaded, pgss_ng defines
# pg_stat_statements.max, .track, .track_utility, .track_planning and
# .save as read-only mirrors of its own GUCs.
#
# - pgss_ng only, with non-default pgss_ng settings and a DBA's leftover
#   pg_stat_statements.track and .max lines in postgresql.conf: the server
#   starts, one WARNING per leftover line names it and says to set the
#   pgss_ng GUC instead; pg_settings has exactly the five mirrors, each
#   with the setting, type and context of the pgss_ng GUC it shows.
# - Always equal: a session's SET pgss_ng.track shows in that session's
#   pg_stat_statements.track (SHOW, current_setting(), pg_settings), and a
#   reload of pgss_ng.max in pg_stat_statements.max.
# - Setting a mirror is refused with that message: SET, ALTER SYSTEM (the
#   file is not written), ALTER ROLE ... SET, set_config().  A reload with
#   the leftover lines still in the file logs them and applies the rest.
# - With pg_stat_statements preloaded as well, first or last: the server
#   starts, no mirror is defined (no WARNING), the settings are contrib's
#   own (its values from the file, settable).
# - Without pgss_ng preloaded: no mirror; CREATE EXTENSION pgss_ng_compat
#   CASCADE works, reading its view raises pgss_ng's "must be loaded" error.
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

# -- the mirrors ------------------------------------------------------------

is($node->safe_psql('postgres', $mirrors_sql),
	join("\n",
		'pg_stat_statements.max|1234|integer|sighup',
		'pg_stat_statements.save|off|bool|sighup',
		'pg_stat_statements.track|all|enum|superuser',
		'pg_stat_statements.track_planning|on|bool|superuser',
		'pg_stat_statements.track_utility|off|bool|superuser'),
	'pgss_ng only: the five mirrors show pgss_ng\'s settings');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_settings m
JOIN pg_settings n ON n.name = 'pgss_ng.' || split_part(m.name, '.', 2)
WHERE m.name LIKE 'pg\_stat\_statements.%'
  AND (m.setting, m.vartype, m.context, m.enumvals)
      IS NOT DISTINCT FROM (n.setting, n.vartype, n.context, n.enumvals)}),
	'5',
	'each mirror has the setting, type, context and values of its pgss_ng GUC');

my $log = slurp_file($node->logfile);
for my $g ('track', 'max')
{
	like(
		$log,
		qr/WARNING:  parameter "pg_stat_statements\.$g" cannot be set\n.*DETAIL:  pg_stat_statements is not loaded: "pg_stat_statements\.$g" shows the value of "pgss_ng\.$g"\.\n.*HINT:  Set "pgss_ng\.$g" instead\./,
		"start: the leftover pg_stat_statements.$g line gets a WARNING "
		  . 'saying what to set');
}

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
ok( $node->wait_for_log(
		qr/LOG:  parameter "pg_stat_statements\.track" cannot be set/, $pos),
	'reload: the leftover line is logged again');
like(slurp_file($node->logfile, $pos),
	qr/configuration file ".*" contains errors; unaffected changes were applied/,
	'reload: the other changes were applied');

# -- setting a mirror is refused ---------------------------------------------

my $refusal = join("\n",
	'ERROR:  parameter "pg_stat_statements.track" cannot be set',
	'DETAIL:  pg_stat_statements is not loaded: "pg_stat_statements.track" '
	  . 'shows the value of "pgss_ng.track".',
	'HINT:  Set "pgss_ng.track" instead.');
for my $stmt (
	"SET pg_stat_statements.track = 'none'",
	"ALTER SYSTEM SET pg_stat_statements.track = 'none'",
	"ALTER ROLE CURRENT_USER SET pg_stat_statements.track = 'none'",
	"SELECT set_config('pg_stat_statements.track', 'none', false)")
{
	my ($rc, $out, $err) = $node->psql('postgres', $stmt,
		extra_params => [ '-v', 'VERBOSITY=default' ]);
	$err =~ s/^psql:<stdin>:\d+: //mg;
	is("$rc\n$err", "3\n$refusal", "refused: $stmt");
}
unlike(slurp_file($node->data_dir . '/postgresql.auto.conf'),
	qr/pg_stat_statements/, 'ALTER SYSTEM wrote nothing');
is($node->safe_psql('postgres', 'SHOW pg_stat_statements.track'),
	'all', 'after the refusals the mirror still shows pgss_ng.track');

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
			"SET pg_stat_statements.track = 'none'; SHOW pg_stat_statements.track"),
		'none', "$spl: pg_stat_statements.track can be set");
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
