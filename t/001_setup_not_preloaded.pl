# 001_setup_not_preloaded.pl
#
# A server WITHOUT pgss_ng in shared_preload_libraries: CREATE EXTENSION
# pgss_ng works, but reading pgss_ng (both forms), pgss_ng_info and the
# time histograms, and calling pgss_ng_reset() (both forms) each fail with
# the ERROR
#   pgss_ng must be loaded via "shared_preload_libraries"   (SQLSTATE 55000)
# in the same session, which stays usable; no backend crashes and the
# server is still up afterwards.
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
		'postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pgss_ng'"),
	'1.0',
	'CREATE EXTENSION pgss_ng works');

# Each statement in one session, each followed by the SQLSTATE and message
# of the error it raised, and a final statement showing the session is fine.
my @stmts = (
	'SELECT * FROM pgss_ng',
	'SELECT * FROM pgss_ng(false)',
	'SELECT * FROM pgss_ng_detail',
	'SELECT * FROM pgss_ng_detail(false)',
	'SELECT * FROM pgss_ng_info',
	'SELECT pgss_ng_reset()',
	'SELECT pgss_ng_reset(0, 0, 0, true)',
	'SELECT * FROM pgss_ng_exec_time_histogram(10, 5, 1, true)',
	'SELECT * FROM pgss_ng_plan_time_histogram(10, 5, 1, true)');
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
