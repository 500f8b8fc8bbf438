# t/lib/PgssNgExt.pm
#	Helpers of the 7xx tests, which check the SQL objects of pgss_ng and
#	pgss_ng_compat: found in the catalogs (so that objects a later version
#	adds are checked too) and called with arguments of their exact types.
package PgssNgExt;

use strict;
use warnings;

use Exporter 'import';

our @EXPORT = qw(ext_versions ext_functions ext_views typed_value call_sql);

# ext_versions($node, $ext)
#	The versions of extension $ext that the installation offers
#	(pg_available_extension_versions), oldest first.
sub ext_versions
{
	my ($node, $ext) = @_;
	return split /\n/, $node->safe_psql('postgres', qq{
SELECT version FROM pg_available_extension_versions WHERE name = '$ext'
ORDER BY string_to_array(version, '.')::int[]});
}

# ext_functions($node, $db, @extensions)
#	The member functions of those extensions in $db, each a hash:
#	extension, schema, name, in (array of IN argument types, format_type's names),
#	ndefaults, out (array of [name, type] of the OUT columns), result
#	(pg_get_function_result), retset, symbol (prosrc), language.
sub ext_functions
{
	my ($node, $db, @exts) = @_;
	my $list = join(', ', map { "'$_'" } @exts);
	my @f;
	for my $line (split /\n/, $node->safe_psql(
			$db, qq{
SELECT p.pronamespace::regnamespace, p.proname,
       coalesce((SELECT string_agg(format_type(t, NULL), ';' ORDER BY n)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, n)), ''),
       p.pronargdefaults,
       coalesce((SELECT string_agg(a.name || ' ' || format_type(a.t, NULL), ';'
                                   ORDER BY a.n)
                 FROM unnest(p.proargnames, p.proargmodes, p.proallargtypes)
                        WITH ORDINALITY a(name, mode, t, n)
                 WHERE a.mode IN ('o', 't')), ''),
       pg_get_function_result(p.oid), p.proretset, p.prosrc,
       (SELECT l.lanname FROM pg_language l WHERE l.oid = p.prolang),
       e.extname
FROM pg_depend d
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass
                   AND d.refobjid = e.oid AND d.deptype = 'e'
JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
WHERE e.extname IN ($list)
ORDER BY 2, 3}))
	{
		my ($schema, $name, $in, $nd, $out, $result, $retset, $symbol, $lang,
			$ext) = split /\|/, $line;
		push @f,
		  {
			extension => $ext,
			schema => $schema,
			name => $name,
			in => [ split /;/, $in ],
			ndefaults => $nd,
			out => [ map { [ split / /, $_, 2 ] } split /;/, $out ],
			result => $result,
			retset => $retset eq 't',
			symbol => $symbol,
			language => $lang,
		  };
	}
	return @f;
}

# ext_views($node, $db, @extensions)
#	The member views of those extensions in $db, schema-qualified.
sub ext_views
{
	my ($node, $db, @exts) = @_;
	my $list = join(', ', map { "'$_'" } @exts);
	return split /\n/, $node->safe_psql(
		$db, qq{
SELECT c.oid::regclass
FROM pg_depend d
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass
                   AND d.refobjid = e.oid AND d.deptype = 'e'
JOIN pg_class c ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
WHERE e.extname IN ($list) AND c.relkind = 'v'
ORDER BY 1});
}

# typed_value($type)
#	A constant of $type for calling a function: every entry or all of
#	them where the argument selects (true, 0, -infinity), NULL of the type
#	for a type it does not know.
sub typed_value
{
	my ($type) = @_;
	my %v = (
		'boolean' => 'true',
		'oid' => '0',
		'bigint' => '0',
		'integer' => '0',
		'timestamp with time zone' => "'-infinity'",
		'text' => "''");
	return ($v{$type} // 'NULL') . "::$type";
}

# call_sql($f)
#	A statement calling function $f (an ext_functions hash),
#	schema-qualified, with a typed constant for every argument: it reads
#	all the rows the call returns.
sub call_sql
{
	my ($f) = @_;
	my $args = join(', ', map { typed_value($_) } @{ $f->{in} });
	return "SELECT count(*) FROM $f->{schema}.$f->{name}($args)";
}

1;
