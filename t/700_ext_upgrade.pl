# 700_ext_upgrade.pl
#
# ALTER EXTENSION ... UPDATE gives exactly the objects of a fresh CREATE
# EXTENSION of the newest version, for pgss_ng and pgss_ng_compat.
#
# The versions are those the installation offers
# (pg_available_extension_versions), oldest first; the newest is each
# extension's default_version.  Compared with a fresh install of the newest
# (pgss_ng in schema ng, pgss_ng_compat in schema mon, each in a database
# of its own):
#  - the oldest of both, updated step by step (UPDATE TO each next
#    version) to the newest, pgss_ng first, then pgss_ng_compat;
#  - the same with pgss_ng_compat updated first;
#  - each older version of one extension (the other at its newest), updated
#    to the newest in one ALTER EXTENSION ... UPDATE.
# What is compared, as text (one line per fact), so that objects added by a later version are
# compared without a change here: the extension's row (version,
# relocatable, schema, configuration tables), its member objects
# (pg_describe_object over pg_depend deptype 'e'), and for each member:
# relations (kind, grants, options, columns with types, view definitions),
# functions (pg_get_functiondef: signature, result, language, volatility,
# strictness, security, settings, body; and grants), types (grants),
# comments, and the initial privileges pg_dump relies on (pg_init_privs).
#
# The released scripts stay as released: pgss_ng--1.0.sql, and
# pgss_ng_compat--1.0.sql as scripts/compat-sql.pl makes it from its frozen
# template for each server major, have the checksums of 1.0.
use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;
use PgssNgExt;

# -- the released 1.0 scripts ---------------------------------------------------

is( sha256_hex(slurp_file('pgss_ng--1.0.sql')),
	'c580c519be8df68c7e49a8c1bb7fa49307130cff922afc698750da6c395e3415',
	'pgss_ng--1.0.sql is the released 1.0');
my %compat_10 = (
	15 => '0dc0df1df3bfe948c4bed43bc7acb2ff6e05e1e677a1cb6830024b218a4b33b0',
	16 => '7cd98580cdedcc4820143a2ba1a1b6c3e7b32c9e0aa86d12e28f8d3054b7b430',
	17 => 'ee024f9853ea624c51950f3aa6bbea9d7bd3a79b679f80fdccd890f4353405db',
	18 => 'db74a7dade1851847d689d63da109ad037a8c2d217e7c14adce11aa6eb5ce02b');
for my $major (sort keys %compat_10)
{
	my ($out, $err);
	IPC::Run::run([ 'perl', 'scripts/compat-sql.pl', $major,
			'pgss_ng_compat--1.0.sql.in' ],
		'>', \$out, '2>', \$err)
	  or die "compat-sql.pl $major: $err";
	is(sha256_hex($out), $compat_10{$major},
		"pgss_ng_compat--1.0.sql for PostgreSQL $major is the released 1.0");
}

# -- updates -----------------------------------------------------------------

my $node = pgss_node('ext_upgrade', 'pgss_ng.track' => 'none');
my %schema = (pgss_ng => 'ng', pgss_ng_compat => 'mon');

# The versions of $ext, oldest first.
sub versions
{
	my ($ext) = @_;
	my @v = ext_versions($node, $ext);
	my $default = $node->safe_psql('postgres',
		"SELECT default_version FROM pg_available_extensions WHERE name = '$ext'");
	is($v[-1], $default, "$ext: the newest version ($v[-1]) is the default");
	return @v;
}
my %versions = map { $_ => [ versions($_) ] } qw(pgss_ng pgss_ng_compat);
note "versions: ",
  join('; ', map { "$_ @{$versions{$_}}" } sort keys %versions);

# A new database with both extensions, each at the version given.
my $ndb = 0;
sub new_db
{
	my (%version) = @_;
	my $db = 'upgrade_' . ++$ndb;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql(
		$db, qq{
CREATE SCHEMA ng;
CREATE SCHEMA mon;
CREATE EXTENSION pgss_ng SCHEMA ng VERSION '$version{pgss_ng}';
CREATE EXTENSION pgss_ng_compat SCHEMA mon VERSION '$version{pgss_ng_compat}';
});
	return $db;
}

# Update $ext in $db through each version after the installed one, one
# ALTER EXTENSION ... UPDATE TO per step.
sub update_stepwise
{
	my ($db, $ext) = @_;
	my $from = $node->safe_psql($db,
		"SELECT extversion FROM pg_extension WHERE extname = '$ext'");
	my @v = @{ $versions{$ext} };
	shift @v while @v && $v[0] ne $from;
	shift @v;
	$node->safe_psql($db, "ALTER EXTENSION $ext UPDATE TO '$_'") for @v;
	return;
}

# Everything of $ext in $db that a fresh install must equal: sorted lines.
sub snapshot
{
	my ($db, $ext) = @_;
	return $node->safe_psql(
		$db, qq{
WITH ext AS (SELECT * FROM pg_extension WHERE extname = '$ext'),
members AS (
  SELECT d.classid, d.objid, d.objsubid
  FROM pg_depend d, ext
  WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
    AND d.deptype = 'e'),
lines AS (
  SELECT format('extension %s %s relocatable %s schema %s config %s %s',
                extname, extversion, extrelocatable,
                extnamespace::regnamespace, extconfig, extcondition)
  FROM ext
  UNION ALL
  SELECT 'member ' || pg_describe_object(classid, objid, objsubid)
  FROM members
  UNION ALL
  SELECT format('comment on %s: %s', pg_describe_object(classid, objid, 0),
                obj_description(objid, classid::regclass::text))
  FROM members WHERE obj_description(objid, classid::regclass::text) IS NOT NULL
  UNION ALL
  SELECT format('relation %s kind %s acl %s options %s', c.oid::regclass,
                c.relkind, coalesce(c.relacl::text, 'default'), c.reloptions)
  FROM members m JOIN pg_class c
    ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  UNION ALL
  SELECT format('column %s %s %s %s acl %s', c.oid::regclass,
                lpad(a.attnum::text, 4, '0'), a.attname,
                format_type(a.atttypid, a.atttypmod),
                coalesce(a.attacl::text, 'default'))
  FROM members m JOIN pg_class c
    ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
                     AND NOT a.attisdropped
  UNION ALL
  SELECT format('view %s: %s', c.oid::regclass, pg_get_viewdef(c.oid))
  FROM members m JOIN pg_class c
    ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  WHERE c.relkind IN ('v', 'm')
  UNION ALL
  SELECT format('function %s acl %s: %s', p.oid::regprocedure,
                coalesce(p.proacl::text, 'default'), pg_get_functiondef(p.oid))
  FROM members m JOIN pg_proc p
    ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  UNION ALL
  SELECT format('type %s %s acl %s', t.oid::regtype, t.typtype,
                coalesce(t.typacl::text, 'default'))
  FROM members m JOIN pg_type t
    ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
  UNION ALL
  SELECT format('initial privileges %s %s: %s',
                pg_describe_object(i.classoid, i.objoid, i.objsubid),
                i.privtype, i.initprivs)
  FROM members m JOIN pg_init_privs i
    ON i.classoid = m.classid AND i.objoid = m.objid)
SELECT line FROM (SELECT replace(l, E'\n', ' // ') FROM lines x(l)) s(line)
ORDER BY line COLLATE "C"});
}

# The lines only in one snapshot or the other, for a failure's report.
sub differences
{
	my ($got, $want) = @_;
	my (%g, %w);
	$g{$_}++ for split /\n/, $got;
	$w{$_}++ for split /\n/, $want;
	return join("\n",
		(map { "only after update: $_" } grep { !$w{$_} } sort keys %g),
		(map { "only in fresh: $_" } grep { !$g{$_} } sort keys %w));
}

my %newest = map { $_ => $versions{$_}[-1] } keys %versions;
my %oldest = map { $_ => $versions{$_}[0] } keys %versions;
my $fresh_db = new_db(%newest);
my %fresh = map { $_ => snapshot($fresh_db, $_) } keys %versions;
like($fresh{pgss_ng}, qr/^member view ng\.pgss_ng$/m,
	'the snapshot lists the members (view pgss_ng)');
like($fresh{pgss_ng_compat},
	qr/^function mon\.pg_stat_statements\(boolean\) acl default: CREATE OR REPLACE FUNCTION mon\.pg_stat_statements\(/m,
	'the snapshot lists function definitions');

# Compare both extensions of $db with the fresh ones.
sub same_as_fresh
{
	my ($db, $what) = @_;
	for my $ext (sort keys %fresh)
	{
		my $got = snapshot($db, $ext);
		ok($got eq $fresh{$ext}, "$what: $ext is as a fresh install")
		  or diag(differences($got, $fresh{$ext}));
	}
	return;
}

my $db = new_db(%oldest);
update_stepwise($db, $_) for qw(pgss_ng pgss_ng_compat);
same_as_fresh($db,
	"oldest ($oldest{pgss_ng}, $oldest{pgss_ng_compat}) updated step by step, pgss_ng first");

$db = new_db(%oldest);
update_stepwise($db, $_) for qw(pgss_ng_compat pgss_ng);
same_as_fresh($db,
	"oldest updated step by step, pgss_ng_compat first");

for my $ext (sort keys %versions)
{
	for my $v (@{ $versions{$ext} }[ 0 .. $#{ $versions{$ext} } - 1 ])
	{
		$db = new_db(%newest, $ext => $v);
		$node->safe_psql($db, "ALTER EXTENSION $ext UPDATE");
		same_as_fresh($db, "$ext $v updated in one step");
	}
}

$node->stop;
done_testing();
