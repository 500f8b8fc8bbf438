# 470_faults_bad_settings.pl
#
# Bad pgss_ng settings in the configuration files, as PostgreSQL 15 really
# handles them for a library in shared_preload_libraries: the server STARTS.
# The placeholder values read before the library is loaded are applied when
# _PG_init() defines the GUCs; a bad one is reported as a WARNING and the
# GUC keeps its built-in default (source "default"), and a name under the
# reserved prefix "pgss_ng." that pgss_ng does not define is removed with a
# WARNING.  Shared memory is then sized with the defaults (pgss_ng_info's
# entries_max and qtext_limit_bytes) and statements are counted normally.
#
#   1. start with values below the range, malformed and unknown: the
#      exact WARNINGs, every setting at its default, pg_file_settings
#      flags each bad line, counting works;
#   2. reload with the same file: the same messages at LOG level and
#      "contains errors; unaffected changes were applied", nothing changes;
#   3. reload with valid reloadable values next to bad ones: the valid
#      ones are applied (pgss_ng.max 200, track all, track_cpu on), the bad
#      ones are not, and a changed restart-only setting is reported and
#      ignored;
#   4. restart with the largest valid values: used as given (the
#      eviction log's 100000 entries are 32 MB of shared memory);
#   5. restart with values just above the range, and an empty enum: the
#      WARNINGs, the defaults.
# No backend or server crash anywhere.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

# (not started: the settings under test come first)
my $node = pgss_node(
	'bad_input',
	'pgss_ng.save' => 'off',
	include_if_exists => 'pgss_ng_bad.conf',
	_start => 0);

# The valid range of a GUC with a unit, as the server's message shows it
# (PostgreSQL 17 added the unit).
my $qtm_range =
  $node->pg_version >= 17 ? '(256 kB .. 1073741823 kB)' : '(256 .. 1073741823)';

# The settings under test live in an included file, rewritten per step.
sub write_bad_conf
{
	my ($text) = @_;
	my $file = $node->data_dir . '/pgss_ng_bad.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $text;
	close $fh;
	return;
}

# name, setting and source of every pgss_ng GUC this test sets, one line
# each (not the plan rows', which t/700 covers)
sub settings
{
	return $node->safe_psql(
		'postgres', q{
SELECT name || ' ' || setting || coalesce(unit, '') || ' ' || source
FROM pg_settings WHERE name LIKE 'pgss\_ng.%'
  AND name NOT IN ('pgss_ng.plan_text_memory', 'pgss_ng.plans_max',
                   'pgss_ng.track_plans')
ORDER BY name COLLATE "C"});
}

my $defaults = join("\n",
	'pgss_ng.evicted_log 100 default',
	'pgss_ng.max 5000 default',
	'pgss_ng.query_text_memory 16384kB default',
	'pgss_ng.save off configuration file',
	'pgss_ng.track top default',
	'pgss_ng.track_cpu off default',
	'pgss_ng.track_planning off default',
	'pgss_ng.track_utility on default',
	'pgss_ng.wait_events_max 20000 default',
	'pgss_ng.wait_sample_period 10ms default');

# One session: reset, three executions of one statement, two utility
# statements, then the entries (the session's own counts are flushed
# before it reads).
sub counting_works
{
	my ($label) = @_;
	my $out = $node->safe_psql(
		'postgres', q{
SELECT pgss_ng_reset() IS NOT NULL;
SELECT 1 AS a;
SELECT 2 AS a;
SELECT 3 AS a;
CREATE TABLE t80 ();
DROP TABLE t80;
SELECT calls || ' ' || query FROM pgss_ng ORDER BY query COLLATE "C";
});
	is( $out,
		join("\n",
			't', '1', '2', '3',
			'1 CREATE TABLE t80 ()',
			'1 DROP TABLE t80',
			'3 SELECT $1 AS a',
			'1 SELECT pgss_ng_reset() IS NOT NULL'),
		"$label: statements are counted");
	return;
}

sub no_crash
{
	my ($label) = @_;
	ok( !$node->log_contains(
			qr/terminated by signal|server process .* exited with exit code|all server processes terminated|PANIC/
		),
		"$label: no crash in the server log");
	return;
}

# ------------------------------------------------------------------
# 1. Start with bad values
write_bad_conf(
	q{
pgss_ng.max = 50
pgss_ng.query_text_memory = '100kB'
pgss_ng.track = 'bogus'
pgss_ng.track_utility = 'maybe'
pgss_ng.track_planning = 'sometimes'
pgss_ng.track_cpu = 'often'
pgss_ng.save = 'perhaps'
pgss_ng.evicted_log = -1
pgss_ng.no_such_setting = 1
});
ok($node->start(fail_ok => 1), '1: the server starts with bad pgss_ng values');

my @startup_warnings = (
	'WARNING:  50 is outside the valid range for parameter "pgss_ng.max" (100 .. 536870911)',
	'WARNING:  100 kB is outside the valid range for parameter "pgss_ng.query_text_memory" ' . $qtm_range,
	'WARNING:  invalid value for parameter "pgss_ng.track": "bogus"',
	'HINT:  Available values: none, top, all.',
	'WARNING:  parameter "pgss_ng.track_utility" requires a Boolean value',
	'WARNING:  parameter "pgss_ng.track_planning" requires a Boolean value',
	'WARNING:  parameter "pgss_ng.track_cpu" requires a Boolean value',
	'WARNING:  parameter "pgss_ng.save" requires a Boolean value',
	'WARNING:  -1 is outside the valid range for parameter "pgss_ng.evicted_log" (0 .. 100000)',
	'WARNING:  invalid configuration parameter name "pgss_ng.no_such_setting", removing it',
	'DETAIL:  "pgss_ng" is now a reserved prefix.');
for my $w (@startup_warnings)
{
	ok($node->log_contains(qr/\Q$w\E$/m), "1: logged: $w");
}

# save was "off" in postgresql.conf, but the bad value read later wins
# over it and is rejected: the built-in default (on)
is( settings(),
	join("\n",
		'pgss_ng.evicted_log 100 default',
		'pgss_ng.max 5000 default',
		'pgss_ng.query_text_memory 16384kB default',
		'pgss_ng.save on default',
		'pgss_ng.track top default',
		'pgss_ng.track_cpu off default',
		'pgss_ng.track_planning off default',
		'pgss_ng.track_utility on default',
		'pgss_ng.wait_events_max 20000 default',
		'pgss_ng.wait_sample_period 10ms default'),
	'1: every pgss_ng setting is at its default');

is( $node->safe_psql(
		'postgres', q{
SELECT name || ' ' || setting || ' ' || applied || ' ' || coalesce(error, '-')
FROM pg_file_settings
WHERE sourcefile LIKE '%pgss_ng_bad.conf' ORDER BY sourceline}),
	join("\n",
		'pgss_ng.max 50 false setting could not be applied',
		'pgss_ng.query_text_memory 100kB false setting could not be applied',
		'pgss_ng.track bogus false setting could not be applied',
		'pgss_ng.track_utility maybe false setting could not be applied',
		'pgss_ng.track_planning sometimes false setting could not be applied',
		'pgss_ng.track_cpu often false setting could not be applied',
		'pgss_ng.save perhaps false setting could not be applied',
		'pgss_ng.evicted_log -1 false setting could not be applied',
		'pgss_ng.no_such_setting 1 false setting could not be applied'),
	'1: pg_file_settings marks each bad line as not applied');

$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
is( $node->safe_psql(
		'postgres', 'SELECT entries_max, qtext_limit_bytes FROM pgss_ng_info'),
	'5000|16777216',
	'1: shared memory sized with the defaults');
counting_works('1');

# ------------------------------------------------------------------
# 2. Reload with the same bad file
my $offset = -s $node->logfile;
$node->reload;
$node->wait_for_log(
	qr/configuration file ".*pgss_ng_bad\.conf" contains errors; unaffected changes were applied/,
	$offset);
my @reload_logs = (
	'LOG:  50 is outside the valid range for parameter "pgss_ng.max" (100 .. 536870911)',
	'LOG:  100 kB is outside the valid range for parameter "pgss_ng.query_text_memory" ' . $qtm_range,
	'LOG:  invalid value for parameter "pgss_ng.track": "bogus"',
	'LOG:  parameter "pgss_ng.track_utility" requires a Boolean value',
	'LOG:  parameter "pgss_ng.track_planning" requires a Boolean value',
	'LOG:  parameter "pgss_ng.track_cpu" requires a Boolean value',
	'LOG:  parameter "pgss_ng.save" requires a Boolean value',
	'LOG:  -1 is outside the valid range for parameter "pgss_ng.evicted_log" (0 .. 100000)',
	'LOG:  invalid configuration parameter name "pgss_ng.no_such_setting"');
for my $l (@reload_logs)
{
	ok($node->log_contains(qr/\Q$l\E$/m, $offset),
		"2: logged at reload: $l");
}
is( settings(),
	join("\n",
		'pgss_ng.evicted_log 100 default',
		'pgss_ng.max 5000 default',
		'pgss_ng.query_text_memory 16384kB default',
		'pgss_ng.save on default',
		'pgss_ng.track top default',
		'pgss_ng.track_cpu off default',
		'pgss_ng.track_planning off default',
		'pgss_ng.track_utility on default',
		'pgss_ng.wait_events_max 20000 default',
		'pgss_ng.wait_sample_period 10ms default'),
	'2: nothing changed');
counting_works('2');

# ------------------------------------------------------------------
# 3. Valid reloadable values next to bad ones; a restart-only change
write_bad_conf(
	q{
pgss_ng.max = 200
pgss_ng.track = 'all'
pgss_ng.track_cpu = on
pgss_ng.track_utility = 'maybe'
pgss_ng.query_text_memory = '1MB'
});
$offset = -s $node->logfile;
$node->reload;
$node->wait_for_log(
	qr/configuration file ".*pgss_ng_bad\.conf" contains errors; unaffected changes were applied/,
	$offset);
ok( $node->log_contains(
		qr/LOG:  parameter "pgss_ng\.query_text_memory" cannot be changed without restarting the server$/m,
		$offset),
	'3: the restart-only change is reported');
ok( $node->log_contains(
		qr/LOG:  parameter "pgss_ng\.track_utility" requires a Boolean value$/m,
		$offset),
	'3: the bad value is reported');
is( settings(),
	join("\n",
		'pgss_ng.evicted_log 100 default',
		'pgss_ng.max 200 configuration file',
		'pgss_ng.query_text_memory 16384kB default',
		'pgss_ng.save off configuration file',
		'pgss_ng.track all configuration file',
		'pgss_ng.track_cpu on configuration file',
		'pgss_ng.track_planning off default',
		'pgss_ng.track_utility on default',
		'pgss_ng.wait_events_max 20000 default',
		'pgss_ng.wait_sample_period 10ms default'),
	'3: the valid values are applied, the others keep their values');
is( $node->safe_psql(
		'postgres', 'SELECT entries_max, qtext_limit_bytes FROM pgss_ng_info'),
	'200|16777216',
	'3: the new pgss_ng.max is in force, the text arena is unchanged');
counting_works('3');
no_crash('3');

# ------------------------------------------------------------------
# 4. Restart with the largest valid values
write_bad_conf(
	q{
pgss_ng.max = 536870911
pgss_ng.query_text_memory = '1073741823kB'
pgss_ng.evicted_log = 100000
});
$node->stop;
ok($node->start(fail_ok => 1), '4: the server starts with the largest values');
is( settings(),
	join("\n",
		'pgss_ng.evicted_log 100000 configuration file',
		'pgss_ng.max 536870911 configuration file',
		'pgss_ng.query_text_memory 1073741823kB configuration file',
		'pgss_ng.save off configuration file',
		'pgss_ng.track top default',
		'pgss_ng.track_cpu off default',
		'pgss_ng.track_planning off default',
		'pgss_ng.track_utility on default',
		'pgss_ng.wait_events_max 1000000 default',
		'pgss_ng.wait_sample_period 10ms default'),
	'4: the values are used as given');
is( $node->safe_psql(
		'postgres', 'SELECT entries_max, qtext_limit_bytes FROM pgss_ng_info'),
	'536870911|1099511626752',
	'4: pgss_ng_info shows them');
counting_works('4');

# ------------------------------------------------------------------
# 5. Restart with values just above the range and an empty enum
write_bad_conf(
	q{
pgss_ng.max = 536870912
pgss_ng.query_text_memory = '1TB'
pgss_ng.track = ''
pgss_ng.evicted_log = 100001
});
$node->stop;
$offset = -s $node->logfile;
ok($node->start(fail_ok => 1), '5: the server starts');
for my $w (
	'WARNING:  536870912 is outside the valid range for parameter "pgss_ng.max" (100 .. 536870911)',
	'WARNING:  1073741824 kB is outside the valid range for parameter "pgss_ng.query_text_memory" ' . $qtm_range,
	'WARNING:  invalid value for parameter "pgss_ng.track": ""',
	'WARNING:  100001 is outside the valid range for parameter "pgss_ng.evicted_log" (0 .. 100000)')
{
	ok($node->log_contains(qr/\Q$w\E$/m, $offset), "5: logged: $w");
}
is(settings(), $defaults, '5: the defaults are used');
is( $node->safe_psql(
		'postgres', 'SELECT entries_max, qtext_limit_bytes FROM pgss_ng_info'),
	'5000|16777216',
	'5: shared memory sized with the defaults');
counting_works('5');
no_crash('5');

$node->stop;
done_testing();
