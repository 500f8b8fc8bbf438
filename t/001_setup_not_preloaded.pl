# 001_setup_not_preloaded.pl
#
# A server WITHOUT pgss_ng in shared_preload_libraries: CREATE EXTENSION
# pgss_ng works, but reading pgss_ng and pgss_ng_detail (both forms),
# pgss_ng_info, pgss_ng_evicted, pgss_ng_evictions, pgss_ng_waits and the time
# histograms, and calling pgss_ng_reset() (both forms) each fail with
# the ERROR
#   pgss_ng must be loaded via "shared_preload_libraries"   (SQLSTATE 55000)
# in the same session, which stays usable; no backend crashes and the
# server is still up afterwards.
#
# The GUCs exist only when pgss_ng is preloaded: a server that preloads it
# lists exactly its thirteen pgss_ng.* settings in pg_settings; on this one
# none appears, neither in a session that loaded the library (LOAD, or by
# calling its functions), and SHOW of each fails with "unrecognized
# configuration parameter" while current_setting(name, true) is NULL.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $msg = 'pgss_ng must be loaded via "shared_preload_libraries"';

my $node = pgss_node('not_preloaded', shared_preload_libraries => '');

is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'pgss_ng is not preloaded');

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
is( $node->safe_psql(
		'postgres', q{
SELECT e.extversion = a.default_version
FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
WHERE e.extname = 'pgss_ng'}),
	't',
	'CREATE EXTENSION pgss_ng works (its default version)');

# Each statement in one session, each followed by the SQLSTATE and message
# of the error it raised, and a final statement showing the session is fine.
my @stmts = (
	'SELECT * FROM pgss_ng',
	'SELECT * FROM pgss_ng(false)',
	'SELECT * FROM pgss_ng_detail',
	'SELECT * FROM pgss_ng_detail(false)',
	'SELECT * FROM pgss_ng_info',
	'SELECT * FROM pgss_ng_evicted',
	'SELECT * FROM pgss_ng_evictions',
	'SELECT * FROM pgss_ng_waits',
	'SELECT pgss_ng_reset()',
	'SELECT pgss_ng_reset(0, 0, 0, true)',
	'SELECT * FROM pgss_ng_exec_time_histogram(10, 5, 1, true)',
	'SELECT * FROM pgss_ng_plan_time_histogram(10, 5, 1, true)',
	'SELECT * FROM pgss_ng_plans',
	'SELECT * FROM pgss_ng_plans_info()');
my $script = '';
for my $i (0 .. $#stmts)
{
	# SQLSTATE is that of the statement just run (00000 if it succeeded)
	$script .= "\\echo stmt $i\n$stmts[$i];\n"
	  . "\\echo :SQLSTATE :LAST_ERROR_MESSAGE\n";
}
$script .= "SELECT 'still usable';\n";

my ($ret, $stdout, $stderr) =
  $node->psql('postgres', $script, on_error_stop => 0);
is($ret, 0, 'psql ran the whole script');

my @out = split /\n/, $stdout;
my $expected_lines = 2 * scalar(@stmts) + 1;
is(scalar(@out), $expected_lines, "psql printed $expected_lines lines");
for my $i (0 .. $#stmts)
{
	is($out[ 2 * $i ], "stmt $i", "output of \"$stmts[$i]\" in place");
	is($out[ 2 * $i + 1 ],
		"55000 $msg", "\"$stmts[$i]\" fails: 55000 $msg");
}
is($out[-1], 'still usable', 'the session survives the errors');

# the server's own words, one ERROR per statement
my @errors = ($stderr =~ /^psql:<stdin>:\d+: ERROR:  (.*)$/mg);
is_deeply(\@errors, [ ($msg) x scalar(@stmts) ],
	'one ERROR per statement, with exactly that message');

# The GUCs: the names a preloading server defines, none here.
my @gucs = qw(pgss_ng.evicted_log pgss_ng.max pgss_ng.plan_text_memory
  pgss_ng.plans_max pgss_ng.query_text_memory pgss_ng.save
  pgss_ng.track pgss_ng.track_cpu pgss_ng.track_planning
  pgss_ng.track_plans pgss_ng.track_utility pgss_ng.wait_events_max
  pgss_ng.wait_sample_period);
my $settings_sql =
  q{SELECT coalesce(string_agg(name, ' ' ORDER BY name), 'none')
	FROM pg_settings WHERE name LIKE 'pgss\_ng.%'};
{
	my $pre = pgss_node('preloaded');
	is($pre->safe_psql('postgres', $settings_sql),
		join(' ', @gucs), 'a preloading server defines the thirteen GUCs');
	$pre->stop;
}
is($node->safe_psql('postgres', $settings_sql),
	'none', 'no pgss_ng GUC without preloading');
{
	my ($out, $err) = ('', '');
	$node->psql(
		'postgres', "SELECT * FROM pgss_ng_info;\n$settings_sql",
		stdout => \$out, stderr => \$err, on_error_stop => 0);
	like($err, qr/\Q$msg\E/, 'a function call loads the library and fails');
	is($out, 'none', 'no pgss_ng GUC either once the library is loaded');
}
$script = "LOAD 'pgss_ng';\n$settings_sql;\n";
for my $g (@gucs)
{
	$script .= "SELECT current_setting('$g', true) IS NULL;\n"
	  . "SHOW $g;\n\\echo :SQLSTATE :LAST_ERROR_MESSAGE\n";
}
($ret, $stdout, $stderr) =
  $node->psql('postgres', $script, on_error_stop => 0);
is($ret, 0, 'psql ran the GUC script');
is( $stdout,
	join("\n",
		'none',
		map { ('t', qq{42704 unrecognized configuration parameter "$_"}) }
		  @gucs),
	'after LOAD: no pgss_ng GUC; current_setting() NULL and SHOW fails for each');

# still up, nothing crashed
is($node->safe_psql('postgres', 'SELECT 1 + 1'), '2', 'server is still up');
ok( !$node->log_contains(
		qr/terminated by signal|server process .* exited with exit code|all server processes terminated/
	),
	'no backend crashed');

$node->safe_psql('postgres', 'DROP EXTENSION pgss_ng');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_extension WHERE extname = 'pgss_ng'"),
	'0',
	'DROP EXTENSION pgss_ng works');

$node->stop;
done_testing();
