# pgss_ng.query_text_memory lowered across a restart: the restore keeps
# every saved entry, stores the texts that fit, drops the others (query
# NULL, counted in qtext_dropped) and evicts nothing; its log line says how
# many entries are there and how many of them lost their text.
#
# 300 statements with texts of about 1 kB each (300 kB) are saved with the
# default 16 MB arena and restored into the smallest one, 256 kB.  The
# restore stores texts only below the level where the arena needs room
# (the cap less 1/8, 224 kB), so about 230 texts fit and about 70 are
# dropped; the exact split is read from pgss_ng_info and checked against
# the view and the log line.  A statement run after the restore then finds
# room for its text without evicting a restored entry.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'qtext_shrink',
	'pgss_ng.max' => 5000,
	'pgss_ng.track' => 'top',
	'pgss_ng.track_utility' => 'off',
	'pgss_ng.track_planning' => 'off',
	'pgss_ng.save' => 'on');
$node->safe_psql('postgres', 'CREATE EXTENSION pgss_ng');
create_wide_table($node, 'w', 20);
# Sessions are untracked unless they say otherwise.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET pgss_ng.track = none');

sub quiet_psql { return $node->safe_psql('postgres', shift); }

# Statement k (1 .. 300): one shape each, its text padded to about 1 kB
# with a comment (part of the text, not of the queryid).
my $pad = 'x' x 900;
sub stmt
{
	my ($k) = @_;
	return sprintf('SELECT c%d, c%d /* %s */ FROM w',
		int(($k - 1) / 20) + 1, ($k - 1) % 20 + 1, $pad);
}

quiet_psql("SELECT pgss_ng_reset();\nSET pgss_ng.track = top;\n"
	  . join('', map { stmt($_) . ";\n" } 1 .. 300));
is(quiet_psql('SELECT entries, dealloc, qtext_dropped FROM pgss_ng_info'),
	'300|0|0', 'before: 300 entries, with their texts');
my $bytes = quiet_psql('SELECT qtext_bytes FROM pgss_ng_info');
cmp_ok($bytes, '>', 256 * 1024, "before: the texts take $bytes bytes, more than 256 kB");

$node->stop;
$node->append_conf('postgresql.conf', "pgss_ng.query_text_memory = '256kB'");
my $pos = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/pgss_ng restored \d+ statement entries/, $pos);
my $log = slurp_file($node->logfile, $pos);
my ($logged, $logged_without) =
  $log =~ /pgss_ng restored (\d+) statement entries from "[^"]*"(?: \((\d+) of them without their query text\))?/;
$logged_without //= 0;

my ($entries, $dealloc, $dropped, $qbytes, $qlimit) = split /\|/,
  quiet_psql('SELECT entries, dealloc, qtext_dropped, qtext_bytes, qtext_limit_bytes '
	  . 'FROM pgss_ng_info');
is($entries, 300, 'after: every saved entry restored');
is($dealloc, 0, 'after: nothing evicted');
cmp_ok($dropped, '>', 0, "after: $dropped texts did not fit");
cmp_ok($dropped, '<', 300, 'after: the others did');
is(quiet_psql('SELECT count(*) FROM pgss_ng WHERE query IS NULL'),
	$dropped, 'after: exactly the entries counted in qtext_dropped have query NULL');
is(quiet_psql("SELECT count(*) FROM pgss_ng WHERE query LIKE 'SELECT c%'"),
	300 - $dropped, 'after: the others have their text');
cmp_ok($qbytes, '<=', $qlimit - $qlimit / 8,
	'after: the texts stay below the level where the arena needs room');
is($logged, 300, 'the log line counts the 300 entries restored');
is($logged_without, $dropped,
	'the log line counts the entries restored without their text');

# A new statement finds room for its text without evicting.
quiet_psql('SET pgss_ng.track = top; SELECT c1 FROM w');
is(quiet_psql('SELECT entries, dealloc FROM pgss_ng_info'),
	'301|0', 'a new statement after the restore: its entry made, nothing evicted');
is(quiet_psql("SELECT count(*) FROM pgss_ng WHERE query = 'SELECT c1 FROM w'"),
	'1', 'a new statement after the restore: its text is stored');

$node->stop;
done_testing();
