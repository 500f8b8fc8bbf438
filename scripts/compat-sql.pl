#!/usr/bin/perl
# compat-sql.pl MAJOR TEMPLATE: print a script of pgss_ng_compat (install
# or upgrade) for PostgreSQL MAJOR (15..18) from TEMPLATE
# (pgss_ng_compat--VERSION.sql.in; pgss_ng_compat--1.0.sql.in's header says
# the syntax, and "--@include FILE" reads FILE, beside the template, in
# its place).  The Makefile runs it with the server's MAJORVERSION.  Dies
# on a server it does not know or a malformed template.
use strict;
use warnings;

my ($major, $template) = @ARGV;
die "usage: compat-sql.pl MAJOR TEMPLATE\n" unless defined $template;

# pg_stat_statements' version on each server major
my %api = (15 => '1.10', 16 => '1.10', 17 => '1.11', 18 => '1.12');
die "compat-sql.pl: PostgreSQL \"$major\" is not supported (15 to 18)\n"
  unless defined $major && exists $api{$major};

# Does the server list SPEC ("15-16", "17-", "-16", "18") include $major?
sub on_server
{
	my ($spec) = @_;
	return 1 unless defined $spec;
	my ($lo, $dash, $hi) = $spec =~ /^(\d*)(-?)(\d*)$/
	  or die "compat-sql.pl: bad server list \"$spec\"\n";
	return $major == $lo if $dash eq '';
	return ($lo eq '' || $major >= $lo) && ($hi eq '' || $major <= $hi);
}

# The template's lines, each --@include replaced by the lines of its file.
sub read_lines
{
	my ($path) = @_;
	open my $in, '<', $path or die "compat-sql.pl: $path: $!\n";
	my @lines;
	while (my $line = <$in>)
	{
		if ($line =~ /^--\@include\s+(\S+)\s*$/)
		{
			my $file = $1;
			my $dir = $path =~ m{^(.*)/} ? $1 : '.';
			push @lines, read_lines("$dir/$file");
		}
		else
		{
			push @lines, $line;
		}
	}
	return @lines;
}

my (@out, @cols, @cond);
for my $line (read_lines($template))
{
	if ($line =~ /^--\@column\s+(\S+)\s+(\S+)((?:\s+\S+)*)\s*$/)
	{
		my ($name, $type, $source, $servers) = ($1, $2, $1, undef);
		for my $f (split ' ', $3)
		{
			if ($f =~ /^\d*-?\d*$/) { $servers = $f; }
			else { $source = $f; }
		}
		push @cols, [ $name, $type, $source ] if on_server($servers);
	}
	elsif ($line =~ /^--\@if\s+(\S+)\s*$/)
	{
		push @cond, { keep => on_server($1), else => 0 };
	}
	elsif ($line =~ /^--\@else\s*$/)
	{
		die "compat-sql.pl: --\@else without --\@if\n"
		  unless @cond && !$cond[-1]{else};
		$cond[-1]{keep} = !$cond[-1]{keep};
		$cond[-1]{else} = 1;
	}
	elsif ($line =~ /^--\@endif\s*$/)
	{
		die "compat-sql.pl: --\@endif without --\@if\n" unless @cond;
		pop @cond;
	}
	elsif ($line =~ /^--[@#]/)
	{
		die "compat-sql.pl: unknown directive: $line" if $line =~ /^--\@/;
	}
	elsif (!grep { !$_->{keep} } @cond)
	{
		push @out, $line;
	}
}
die "compat-sql.pl: --\@if without --\@endif\n" if @cond;

my $text = join('', @out);
die "compat-sql.pl: no columns\n"
  if !@cols && $text =~ /\@(OUT|SELECT)_COLUMNS\@/;
my $out_columns = join(",\n", map { "    OUT $_->[0] $_->[1]" } @cols);
my $select_columns = join(",\n         ", map { $_->[2] } @cols);
$text =~ s/\@OUT_COLUMNS\@/$out_columns/g;
$text =~ s/\@SELECT_COLUMNS\@/$select_columns/g;
$text =~ s/\@MAJOR\@/$major/g;
$text =~ s/\@API\@/$api{$major}/g;
die "compat-sql.pl: unknown placeholder $1\n" if $text =~ /(\@[A-Z_]+\@)/;
print $text;
