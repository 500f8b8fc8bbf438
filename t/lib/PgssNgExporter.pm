# t/lib/PgssNgExporter.pm
#	Run the real postgres_exporter against a test node and read its
#	/metrics (t/610_compat_exporter.pl, t/650_monitoring_exporter.pl).
#
#	The releases are built by scripts/install-exporter.sh into
#	$PGSS_NG_TOOLS_DIR (default /opt/pgss_ng/tools); a missing one is a
#	failed test, not a skip.  Each exporter listens on 127.0.0.1 only and
#	connects through the node's Unix socket; all are stopped at exit.
package PgssNgExporter;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use IPC::Run;
use HTTP::Tiny;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(tools_dir start_exporter scrape metric);

my @running;

# tools_dir()
#	Where scripts/install-exporter.sh put the tools.
sub tools_dir
{
	return $ENV{PGSS_NG_TOOLS_DIR} // '/opt/pgss_ng/tools';
}

# start_exporter($node, $version, $user, @flags)
#	Start postgres_exporter $version (v0.17.1, ...) scraping database
#	postgres of $node as $user, with @flags, and return a handle for
#	scrape() ({ version, port, log }); undef (after a failed test) if the
#	release is not installed.  A configuration file without
#	authentication modules, so that it reads none from its directory.
sub start_exporter
{
	my ($node, $version, $user, @flags) = @_;
	my $bin = tools_dir() . "/postgres_exporter-$version/postgres_exporter";
	if (!-x $bin)
	{
		fail("postgres_exporter $version is installed");
		diag("$bin is missing: scripts/install-deps.sh builds it "
			  . "(scripts/install-exporter.sh, Go module proxy)");
		return undef;
	}
	my $dir = PostgreSQL::Test::Utils::tempdir;
	my $config = "$dir/postgres_exporter.yml";
	open my $fh, '>', $config or die "could not write $config: $!";
	print $fh "auth_modules: {}\n";
	close $fh;

	my $r = {
		version => $version,
		port => PostgreSQL::Test::Cluster::get_free_port(),
		log => "$dir/exporter-$version.log"
	};
	local $ENV{DATA_SOURCE_NAME} =
	  'host=' . $node->host . ' port=' . $node->port
	  . " user=$user dbname=postgres sslmode=disable";
	$r->{handle} = IPC::Run::start(
		[
			$bin, "--web.listen-address=127.0.0.1:$r->{port}",
			"--config.file=$config", '--log.level=info', @flags
		],
		'<', \undef, '>&', $r->{log});
	push @running, $r;
	return $r;
}

# Stop the exporters however the test ends (a failed safe_psql dies).
END
{
	local $?;
	$_->{handle}->kill_kill for @running;
}

# scrape($r)
#	The exporter's /metrics, parsed into a list of { name, labels => {...},
#	value }.  Waits for the exporter to listen.  Straight to 127.0.0.1,
#	whatever http_proxy says.
my $http = HTTP::Tiny->new(
	timeout => $PostgreSQL::Test::Utils::timeout_default,
	proxy => undef,
	http_proxy => undef);

sub scrape
{
	my ($r) = @_;
	my $url = "http://127.0.0.1:$r->{port}/metrics";
	my $res;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		$res = $http->get($url);
		last if $res->{success} || $res->{status} != 599;
		select undef, undef, undef, 0.1;
	}
	die "GET $url: $res->{status} $res->{reason}\n"
	  . slurp_file($r->{log}) unless $res->{success};
	my @metrics;
	for my $line (split /\n/, $res->{content})
	{
		next if $line =~ /^#/ || $line !~ /\S/;
		$line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(.*)$/ or die "bad line: $line";
		my ($name, $rest, %labels) = ($1, $2);
		if ($rest =~ s/^\{//)
		{
			while ($rest =~ s/^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?//)
			{
				my ($k, $v) = ($1, $2);
				$v =~ s/\\(.)/$1 eq 'n' ? "\n" : $1/ge;
				$labels{$k} = $v;
			}
			$rest =~ s/^\}// or die "bad labels: $line";
		}
		$rest =~ /^\s+(\S+)/ or die "no value: $line";
		push @metrics, { name => $name, labels => \%labels, value => $1 };
	}
	return \@metrics;
}

# metric($metrics, $name, %want)
#	The value of the metric $name whose labels include %want (undef if
#	none; dies if several).
sub metric
{
	my ($metrics, $name, %want) = @_;
	my @hits = grep {
		my $m = $_;
		$m->{name} eq $name
		  && !grep { ($m->{labels}{$_} // "\0") ne $want{$_} } keys %want
	} @$metrics;
	die "several $name for " . join(',', %want) if @hits > 1;
	return @hits ? $hits[0]{value} : undef;
}

1;
