# A query text that the reader's database encoding cannot show never makes
# a read fail: it is shown with a substitute for each character that
# cannot be shown (U+FFFD in a UTF8 database, '?' in others).
#
# bob runs one statement in each of four databases: UTF8 (SELECT 1 AS
# "日本u"), EUC_JP (the same characters, "日本e"), SQL_ASCII (a 0xff byte
# in an identifier) and LATIN1 (é).  Every read of the view, by a
# superuser in each database and by bob, succeeds, and shows exactly:
# - in LATIN1: the Japanese characters as '?' (UTF8 has a conversion to
#   LATIN1, EUC_JP none: both give "??"), the SQL_ASCII byte 0xff as the
#   LATIN1 character it is (ÿ), é as é;
# - in UTF8: the UTF8 and EUC_JP texts as 日本, the byte 0xff (not UTF-8)
#   as U+FFFD, é converted;
# - in EUC_JP: the Japanese characters converted, é (LATIN1 has no
#   conversion to EUC_JP) and the byte 0xff (not EUC_JP) as '?';
# - in SQL_ASCII: every text's bytes as they are.
# The same after a clean restart (the texts were saved and restored), and
# pgss_ng(false) still shows no text.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use PgssNgTest;

my $node = pgss_node(
	'reads_encoding',
	'pgss_ng.save' => 'on',
	_init => { extra => [ '--encoding=UTF8', '--locale=C' ] });

for my $db ([ 'lat1', 'LATIN1' ], [ 'eucjp', 'EUC_JP' ], [ 'sqlasc', 'SQL_ASCII' ])
{
	$node->safe_psql('postgres',
		"CREATE DATABASE $db->[0] ENCODING '$db->[1]' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
	);
}
for my $db (qw(postgres lat1 eucjp sqlasc))
{
	$node->safe_psql($db, 'CREATE EXTENSION pgss_ng');
}
$node->safe_psql('postgres', 'CREATE ROLE bob LOGIN');

# bob's statements; this file's bytes are UTF-8 ("日本" is 6 bytes, "é" 2)
sub run_as_bob
{
	my ($db, $sql, $client_encoding) = @_;
	local $ENV{PGCLIENTENCODING} = $client_encoding;
	$node->safe_psql($db, $sql, extra_params => [ '-U', 'bob' ]);
	return;
}
run_as_bob('postgres', 'SELECT 1 AS "日本u"', 'UTF8');
run_as_bob('eucjp', 'SELECT 1 AS "日本e"', 'UTF8');
run_as_bob('sqlasc', "SELECT 1 AS \"caf\xff\"", 'SQL_ASCII');
run_as_bob('lat1', 'SELECT 1 AS "café"', 'UTF8');

# bob's four texts, by database name, as a reader in $db (with its own
# encoding as the client's) sees them
my $texts_sql = q{
SELECT string_agg(d.datname || '=' || coalesce(p.query, '<null>'), '|' ORDER BY d.datname)
FROM pgss_ng p JOIN pg_database d ON d.oid = p.dbid
WHERE p.query LIKE 'SELECT $1 AS %'};

sub texts_in
{
	my ($db, @user) = @_;
	my $encoding = $db eq 'lat1' ? 'LATIN1' : $db eq 'sqlasc' ? 'SQL_ASCII' : 'UTF8';
	local $ENV{PGCLIENTENCODING} = $encoding;
	my ($rc, $out, $err) = $node->psql($db, $texts_sql,
		extra_params => [ @user ? ('-U', $user[0]) : () ]);
	return $rc == 0 ? $out : "ERROR: $err";
}

# the bytes each reader must get
my %want = (
	lat1 => 'eucjp=SELECT $1 AS "??e"|lat1=SELECT $1 AS "caf' . "\xe9" . '"|'
	  . 'postgres=SELECT $1 AS "??u"|sqlasc=SELECT $1 AS "caf' . "\xff" . '"',
	postgres => 'eucjp=SELECT $1 AS "日本e"|lat1=SELECT $1 AS "café"|'
	  . 'postgres=SELECT $1 AS "日本u"|sqlasc=SELECT $1 AS "caf' . "\xef\xbf\xbd" . '"',
	sqlasc => 'eucjp=SELECT $1 AS "' . "\xc6\xfc\xcb\xdc" . 'e"|lat1=SELECT $1 AS "caf'
	  . "\xe9" . '"|postgres=SELECT $1 AS "日本u"|sqlasc=SELECT $1 AS "caf' . "\xff" . '"',
	eucjp => 'eucjp=SELECT $1 AS "日本e"|lat1=SELECT $1 AS "caf?"|'
	  . 'postgres=SELECT $1 AS "日本u"|sqlasc=SELECT $1 AS "caf?"',
);

sub check_reads
{
	my ($when) = @_;
	for my $db (qw(lat1 postgres sqlasc eucjp))
	{
		is(texts_in($db), $want{$db}, "$when: a superuser's read in $db shows every text");
	}
	is(texts_in('lat1', 'bob'), $want{lat1}, "$when: bob's read in lat1 shows his texts");
	is( $node->safe_psql('lat1',
			q{SELECT count(*), count(query) FROM pgss_ng(false) WHERE toplevel}) =~ /^(\d+)\|0$/
		  ? 'ok' : 'texts', 'ok', "$when: pgss_ng(false) shows no text");
}

check_reads('live');
$node->restart('fast');
like(slurp_file($node->logfile), qr/pgss_ng restored \d+ statement entries from "[^"]*"$/m,
	'the entries were restored');
check_reads('after a restart');

$node->stop;
done_testing();
