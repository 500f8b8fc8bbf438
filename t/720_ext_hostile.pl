# 720_ext_hostile.pl
#
# No role gains anything through the SQL objects of pgss_ng and
# pgss_ng_compat by creating functions where they look.
#
# A hostile role (regress_evil) may create objects in schema mon and, as
# before PostgreSQL 15, in public.  Before CREATE EXTENSION, and in other
# scenarios before ALTER EXTENSION ... UPDATE, it plants functions named
# like every function and view of both extensions (those of the oldest and
# of the newest version, read from the catalogs of a clean install): with
# the same argument types, with the first arguments only (a call relying
# on defaults), and with one more argument that has a default (in the
# schema of the extension itself, the first arguments only: the others
# there only stop CREATE EXTENSION, as 022_ext_security shows); each with
# the OUT columns of the real one, so that a view or a body could be bound
# to it.  A planted function records each call in public.hostile_calls and
# tries to make its owner superuser.  Then, as a superuser, every view of
# both extensions is read and every function called (schema-qualified,
# with arguments of their exact types), and, as the README shows,
# regress_evil is granted EXECUTE on the resets and calls them and reads
# the views.  In every scenario both extensions are created (or updated)
# and no planted function is ever called: hostile_calls stays empty and
# regress_evil never becomes superuser.
#
# Scenarios (each in a database of its own):
#  - readme: pgss_ng in public, pgss_ng_compat in mon (the README's
#    example); planted in mon, those forms that 1.0 bound (same and first
#    arguments: on 1.0 a reset made regress_evil superuser);
#  - readme, all plants: the same, planted in mon and public;
#  - schemas: pgss_ng in ng, pgss_ng_compat in mon; planted in mon and
#    public, search_path public, mon, ng when calling;
#  - same schema: both in mon; planted in mon and public;
#  - update: the oldest version of both, created cleanly, then the readme
#    plants, then ALTER EXTENSION pgss_ng_compat UPDATE; ALTER EXTENSION
#    pgss_ng UPDATE;
#  - hijacked oldest: the readme plants in mon that 1.0 binds (same and
#    first arguments; the others, and those in public, make 1.0's calls
#    ambiguous), then the oldest version of both (1.0's pgss_ng_compat
#    bodies are bound to them), nothing called, then functions with one
#    more argument beside every function of both in mon (pgss_ng_compat's
#    own included), then both updated: every body re-made, nothing
#    planted called;
#  - contrib: contrib's pg_stat_statements exists in schema contrib and
#    format() is planted in mon: CREATE EXTENSION pgss_ng_compat SCHEMA mon
#    is refused (duplicate_object) without calling it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgssNgTest;
use PgssNgExt;

my $node = pgss_node('ext_hostile', 'pgss_ng.track' => 'none');
$node->safe_psql('postgres', 'CREATE ROLE regress_evil LOGIN');

my %oldest = map { $_ => (ext_versions($node, $_))[0] } qw(pgss_ng pgss_ng_compat);

# The functions and views to imitate: those of a clean install of the
# oldest and of the newest version (names and signatures, no duplicates).
my (%targets, %view_names);
for my $which ('oldest', 'newest')
{
	my $db = "catalog_$which";
	my $v = $which eq 'oldest' ? 1 : 0;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql(
		$db, join("\n",
			"CREATE EXTENSION pgss_ng"
			  . ($v ? " VERSION '$oldest{pgss_ng}'" : '') . ';',
			"CREATE EXTENSION pgss_ng_compat"
			  . ($v ? " VERSION '$oldest{pgss_ng_compat}'" : '') . ';'));
	for my $f (ext_functions($node, $db, qw(pgss_ng pgss_ng_compat)))
	{
		$targets{ $f->{name} . '(' . join(',', @{ $f->{in} }) . ')' } = $f;
	}
	$view_names{ s/^.*\.//r } = 1
	  for ext_views($node, $db, qw(pgss_ng pgss_ng_compat));
}
my @targets = map { $targets{$_} } sort keys %targets;
ok(scalar(@targets) >= 11,
	'functions to imitate: ' . join(', ', sort keys %targets));
# a view not named like a function gets a function of its name
for my $v (sort keys %view_names)
{
	next if grep { $_->{name} eq $v } @targets;
	push @targets,
	  { name => $v, in => [], ndefaults => 0, out => [], result => 'integer' };
}

# The CREATE FUNCTION statements planting imitations of every target in
# $schema, in the forms named in $how->{forms}: 'same' (the same argument
# types), 'first' (the first arguments, where the rest have defaults),
# 'extra' (one more argument, with a default).  The targets of the
# extensions in @{$how->{own}}, which are (or will be) created in
# $schema, get only the forms in $how->{own_forms} (default 'first': the
# others there would only stop their creation).  With $drop, the DROP
# FUNCTION statements of those plants instead.
sub plants
{
	my ($schema, $how, $drop) = @_;
	my @sql;
	for my $f (@targets)
	{
		my @in = @{ $f->{in} };
		my $forms = (grep { $_ eq ($f->{extension} // '') } @{ $how->{own} // [] })
		  ? $how->{own_forms} // 'first' : $how->{forms};
		my @arglists;
		push @arglists, [@in] if $forms =~ /\bsame\b/;
		if ($forms =~ /\bfirst\b/)
		{
			push @arglists, [ @in[ 0 .. $_ - 1 ] ]
			  for ($#in + 1 - $f->{ndefaults}) .. $#in;
		}
		push @arglists, [ @in, 'integer DEFAULT 0' ] if $forms =~ /\bextra\b/;
		for my $args (@arglists)
		{
			if ($drop)
			{
				push @sql, "DROP FUNCTION $schema.$f->{name}("
				  . join(', ', map { s/ DEFAULT .*//r } @$args) . ');';
				next;
			}
			my @params = (@$args, map { "OUT $_->[0] $_->[1]" } @{ $f->{out} });
			my ($returns, $ret);
			if (@{ $f->{out} })
			{
				$returns = ($f->{retset} ? 'SETOF ' : '') . 'record';
				$ret = 'RETURN;';
			}
			else
			{
				$returns = $f->{result};
				$ret = $returns eq 'void' ? 'RETURN;' : 'RETURN NULL;';
			}
			push @sql,
			  plant_sql($schema, $f->{name}, $args, \@params, $returns, $ret);
		}
	}
	return join("\n", @sql);
}

# CREATE FUNCTION of a planted $schema.$name(@$params) (@$args: its IN
# arguments): it records the call (hostile_calls, hostile_seq), tries to
# make regress_evil superuser, and ends with $ret.
sub plant_sql
{
	my ($schema, $name, $args, $params, $returns, $ret) = @_;
	my $sig = "$schema.$name(" . join(', ', @$args) . ')';
	return qq{
CREATE FUNCTION $schema.$name(@{[ join(', ', @$params) ]})
RETURNS $returns LANGUAGE plpgsql AS \$plant\$
BEGIN
  PERFORM pg_catalog.nextval('public.hostile_seq');
  INSERT INTO public.hostile_calls VALUES ('$sig', current_user);
  BEGIN
    ALTER ROLE regress_evil SUPERUSER;
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  $ret
END \$plant\$;};
}

# A database with schemas mon (regress_evil may create there) and ng, and
# public open to regress_evil; hostile_calls.
my $ndb = 0;
sub new_db
{
	my $db = 'hostile_' . ++$ndb;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql(
		$db, q{
CREATE SCHEMA mon;
CREATE SCHEMA ng;
GRANT CREATE, USAGE ON SCHEMA mon TO regress_evil;
GRANT USAGE ON SCHEMA ng TO regress_evil;
GRANT CREATE ON SCHEMA public TO regress_evil;
CREATE TABLE public.hostile_calls (fn text, caller name);
GRANT INSERT, SELECT ON public.hostile_calls TO PUBLIC;
CREATE SEQUENCE public.hostile_seq;
GRANT USAGE, SELECT ON public.hostile_seq TO PUBLIC;
ALTER ROLE regress_evil NOSUPERUSER;
});
	return $db;
}

# Plant as regress_evil in $db: pairs of (schema, how: see plants).
sub plant
{
	my ($db, @where) = @_;
	my $sql = "SET ROLE regress_evil;\n";
	while (my ($schema, $how) = splice(@where, 0, 2))
	{
		$sql .= plants($schema, $how);
	}
	$node->safe_psql($db, $sql);
	return;
}

# Everything a superuser and regress_evil do with the extensions in $db,
# then the checks.  $search_path: the calling sessions'.
sub use_and_check
{
	my ($db, $what, $search_path) = @_;
	$search_path //= 'public, mon';
	my @functions = ext_functions($node, $db, qw(pgss_ng pgss_ng_compat));
	my @views = ext_views($node, $db, qw(pgss_ng pgss_ng_compat));
	my @resets = grep { $_->{name} =~ /reset/ } @functions;
	is(scalar(@resets), 2, "$what: both resets exist");
	$node->safe_psql($db,
		join("\n",
			map { "GRANT EXECUTE ON FUNCTION $_->{schema}.$_->{name}("
				  . join(', ', @{ $_->{in} })
				  . ') TO regress_evil;' } @resets));

	my $calls = join("\n",
		"SET search_path = $search_path;",
		(map { "SELECT count(*) FROM $_;" } @views),
		(map { call_sql($_) . ';' } @functions));
	my ($rc, $out, $err) = $node->psql($db, $calls, on_error_stop => 1);
	is($rc, 0, "$what: a superuser reads every view and calls every function")
	  or diag($err);
	my $evil_calls = join("\n",
		"SET ROLE regress_evil;",
		"SET search_path = $search_path;",
		(map { "SELECT count(*) FROM $_;" } @views),
		(map { call_sql($_) . ';' } @resets));
	($rc, $out, $err) = $node->psql($db, $evil_calls, on_error_stop => 1);
	is($rc, 0, "$what: regress_evil reads the views and resets")
	  or diag($err);

	nothing_called($db, $what);
	return;
}

# No planted function ran in $db (hostile_calls, and hostile_seq, which a
# rolled-back call advances too), and regress_evil is no superuser.
sub nothing_called
{
	my ($db, $what) = @_;
	is($node->safe_psql($db,
			"SELECT string_agg(fn || ' by ' || caller, '; ') FROM public.hostile_calls"),
		'', "$what: no planted function was called");
	is($node->safe_psql($db, 'SELECT is_called FROM public.hostile_seq'),
		'f', "$what: no planted function was called, even in a rolled-back transaction");
	is($node->safe_psql('postgres',
			"SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_evil'"),
		'f', "$what: regress_evil is not superuser");
	return;
}

# CREATE EXTENSION of both, each in its schema, at version $version{ext}
# (default: the newest); a failure is reported, not fatal.
sub create_extensions
{
	my ($db, $what, $ng_schema, $compat_schema, %version) = @_;
	my $sql = join("\n",
		"CREATE EXTENSION pgss_ng SCHEMA $ng_schema"
		  . ($version{pgss_ng} ? " VERSION '$version{pgss_ng}'" : '') . ';',
		"CREATE EXTENSION pgss_ng_compat SCHEMA $compat_schema"
		  . ($version{pgss_ng_compat} ? " VERSION '$version{pgss_ng_compat}'" : '')
		  . ';');
	my ($rc, $out, $err) = $node->psql($db, $sql, on_error_stop => 1);
	is($rc, 0, "$what: both extensions created") or diag($err);
	return;
}

sub update_extensions
{
	my ($db, $what) = @_;
	my ($rc, $out, $err) = $node->psql(
		$db, q{
ALTER EXTENSION pgss_ng_compat UPDATE;
ALTER EXTENSION pgss_ng UPDATE;
}, on_error_stop => 1);
	is($rc, 0, "$what: both extensions updated") or diag($err);
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(e.extversion || '=' || a.default_version, ' ' ORDER BY e.extname)
FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
WHERE e.extname LIKE 'pgss%'}) =~ /^(\S+)=\1 (\S+)=\2$/ ? 'newest' : 'not newest',
		'newest', "$what: both at their newest version");
	return;
}

# The README's layout: pgss_ng in public, pgss_ng_compat in mon.
my $all = 'same first extra';
my @readme_plants = (
	mon => { forms => $all, own => ['pgss_ng_compat'] },
	public => { forms => $all, own => ['pgss_ng'] });
# those that 1.0 binds (the others make its calls ambiguous)
my @binding_plants =
  (mon => { forms => 'same first', own => ['pgss_ng_compat'] });

my $db = new_db();
plant($db, @binding_plants);
create_extensions($db, 'readme', 'public', 'mon');
use_and_check($db, 'readme');

$db = new_db();
plant($db, @readme_plants);
create_extensions($db, 'readme, all plants', 'public', 'mon');
use_and_check($db, 'readme, all plants');

$db = new_db();
plant($db,
	mon => { forms => $all, own => ['pgss_ng_compat'] },
	public => { forms => $all });
create_extensions($db, 'schemas', 'ng', 'mon');
use_and_check($db, 'schemas', 'public, mon, ng');

$db = new_db();
plant($db,
	mon => { forms => $all, own => [ 'pgss_ng', 'pgss_ng_compat' ] },
	public => { forms => $all });
create_extensions($db, 'same schema', 'mon', 'mon');
use_and_check($db, 'same schema');

$db = new_db();
create_extensions($db, 'update', 'public', 'mon', %oldest);
plant($db, @readme_plants);
update_extensions($db, 'update');
use_and_check($db, 'update');

# 1.0 bound to planted functions, then more planted beside its own: the
# update of pgss_ng_compat, which replaces what 1.0 bound, must not fail
# (it rolls back whole); pgss_ng's may (its 1.0 objects bind nothing).
$db = new_db();
plant($db, @binding_plants);
create_extensions($db, 'hijacked oldest', 'public', 'mon', %oldest);
my %extra = (forms => 'extra', own => ['pgss_ng_compat'], own_forms => 'extra');
plant($db, mon => \%extra);
update_extensions($db, 'hijacked oldest');
# (they would make the calls below ambiguous, as any caller's)
$node->safe_psql($db, plants('mon', \%extra, 'drop'));
use_and_check($db, 'hijacked oldest');

# contrib's extension: the refusal calls nothing planted
$db = new_db();
$node->safe_psql(
	$db, q{
CREATE SCHEMA contrib;
CREATE EXTENSION pg_stat_statements SCHEMA contrib;
CREATE EXTENSION pgss_ng;
});
$node->safe_psql($db,
	join("\n", 'SET ROLE regress_evil;',
		map { plant_sql('mon', 'format', $_, $_, 'text', 'RETURN NULL;') }
		  [ 'text', 'name' ], [ 'text', 'text' ]));
my ($rc, $out, $err) =
  $node->psql($db, 'CREATE EXTENSION pgss_ng_compat SCHEMA mon');
like($err,
	qr/ERROR:  extension "pgss_ng_compat" cannot be created where extension "pg_stat_statements" exists\nDETAIL:  Extension "pg_stat_statements" is installed in schema contrib of this database/,
	'contrib: pgss_ng_compat refused next to pg_stat_statements');
nothing_called($db, 'contrib');

$node->stop;
done_testing();
