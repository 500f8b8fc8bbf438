# The compat objects against contrib's own, on the same server version.
#
# Node "compat" has only pgss_ng preloaded and CREATE EXTENSION pgss_ng,
# pgss_ng_compat; node "contrib", a second throwaway cluster of the same
# version, has contrib's pg_stat_statements preloaded and created (1.10 on
# 15 and 16, 1.11 on 17, 1.12 on 18: each server's default version).  Both
# in schema public of database postgres.  Compared, exactly:
#  - every object of contrib's extension (pg_describe_object: the
#    functions with their argument types, the views) exists in compat's
#    extension;
#  - the columns of the views pg_stat_statements and
#    pg_stat_statements_info: names, types (with typmod), order;
#  - the functions pg_stat_statements, pg_stat_statements_info and
#    pg_stat_statements_reset: the full argument list (IN and OUT
#    parameters, names, types, defaults, order) and the result type, so
#    reset's signature and return type (void on 15 and 16, timestamptz
#    from 17);
#  - what calling the reset returns (pg_typeof), as a superuser;
#  - the grants: the views readable by PUBLIC, the reset revoked from it
#    (relacl, proacl; both clusters' superuser has the same name).
#  - how the functions are implemented: language (C), volatility,
#    strictness, parallel safety, security (invoker).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgCompat;

my $compat = start_compat_node('compat');
create_compat($compat, 'postgres');
my $contrib = start_contrib_node('contrib');
my $major = server_major($compat);

# Run $sql on both nodes: (compat's output, contrib's output).
sub both
{
	my ($sql) = @_;
	return map { $_->safe_psql('postgres', $sql) } $compat, $contrib;
}

# The objects of contrib's extension, described, and which of them are
# objects of the compat extension.
my $members = q{
SELECT pg_describe_object(d.classid, d.objid, d.objsubid)
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND e.extname = '%s'
 ORDER BY 1};
my $contrib_members =
  $contrib->safe_psql('postgres', sprintf($members, 'pg_stat_statements'));
my $compat_members = $compat->safe_psql('postgres',
	sprintf($members,
		compat_target() eq 'pgss_ng' ? 'pgss_ng_compat' : 'pg_stat_statements'));
my %compat_has = map { $_ => 1 } split /\n/, $compat_members;
ok($contrib_members =~ /^function pg_stat_statements_reset\(/m,
	"contrib's extension has its reset function");
for my $obj (split /\n/, $contrib_members)
{
	ok($compat_has{$obj}, "compat extension has $obj");
}
note("compat extension's objects:\n$compat_members");

# View columns: "attnum name type" per line.
for my $view (qw(pg_stat_statements pg_stat_statements_info))
{
	my ($got, $want) = both(qq{
SELECT a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a
 WHERE a.attrelid = to_regclass('public.$view') AND a.attnum > 0
   AND NOT a.attisdropped
 ORDER BY a.attnum});
	isnt($want, '', "contrib's view $view has columns");
	is($got, $want, "view $view: column names, types and order");
}

# Functions: arguments (IN and OUT, with defaults) and result.
for my $func (qw(pg_stat_statements pg_stat_statements_info pg_stat_statements_reset))
{
	my ($got, $want) = both(qq{
SELECT string_agg(pg_get_function_arguments(p.oid) || ' RETURNS '
                  || pg_get_function_result(p.oid), E'\\n' ORDER BY p.oid)
  FROM pg_proc p
 WHERE p.pronamespace = 'public'::regnamespace AND p.proname = '$func'});
	isnt($want, '', "contrib has function $func");
	is($got, $want, "function $func: arguments and result");

	my ($gimpl, $wimpl) = both(qq{
SELECT string_agg(format('%s %s volatile=%s strict=%s parallel=%s secdef=%s',
                         p.proname, l.lanname, p.provolatile, p.proisstrict,
                         p.proparallel, p.prosecdef), E'\\n')
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'public'::regnamespace AND p.proname = '$func'});
	is($gimpl, $wimpl, "$func: language, volatility, strictness, parallel safety and security as contrib's");
}

my ($got, $want) = both('SELECT pg_typeof(pg_stat_statements_reset())');
is($want, $major >= 17 ? 'timestamp with time zone' : 'void',
	"contrib's reset returns what this server's version does");
is($got, $want, 'the reset returns the same type');

# Grants.
($got, $want) = both(q{
SELECT string_agg(c.relname || ' ' || coalesce(c.relacl::text, 'default'), E'\n' ORDER BY c.relname)
  FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace
   AND c.relname IN ('pg_stat_statements', 'pg_stat_statements_info')});
like($want, qr/=r\//, "contrib's views are readable by PUBLIC");
is($got, $want, 'the views have the same grants');
($got, $want) = both(q{
SELECT string_agg(pg_get_function_identity_arguments(p.oid) || ' '
                  || coalesce(p.proacl::text, 'default'), E'\n' ORDER BY p.oid)
  FROM pg_proc p
 WHERE p.pronamespace = 'public'::regnamespace
   AND p.proname = 'pg_stat_statements_reset'});
unlike($want, qr/default|\{=|,=/, "contrib's reset is revoked from PUBLIC");
is($got, $want, 'the reset has the same grants');

$compat->stop;
$contrib->stop;
note("server $major, target " . compat_target());
done_testing();
