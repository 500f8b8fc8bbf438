# t/PgssNgTest.pm
#	Helpers shared by pgss_ng's TAP tests (found through "-I t", see the
#	Makefile's check-tap target).
package PgssNgTest;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use PostgreSQL::Test::Cluster;

our @EXPORT =
  qw(pgss_node create_wide_table wait_for_clients_gone start_small_arena_node
  setup_alice_bob crc32c write_file);

# pgss_node($name, %gucs)
#	Create, initdb and start a node whose postgresql.conf preloads pgss_ng
#	and then has the given settings, one line each, in the order given
#	(pgss_node('x', 'pgss_ng.max' => 100, 'pgss_ng.track' => 'top')).
#	shared_preload_libraries is 'pgss_ng' unless it is one of them.  Two
#	keys are not settings: _init, a hash ref passed to init(), and _start,
#	false to return the node initialized but not started.  Values other
#	than integers are written single-quoted.
sub pgss_node
{
	my ($name, @args) = @_;
	die "pgss_node: odd number of settings" if @args % 2;
	my (%opt, @gucs);
	while (my ($k, $v) = splice(@args, 0, 2))
	{
		if ($k =~ /^_/) { $opt{$k} = $v; next; }
		push @gucs, [ $k, $v ];
	}
	unshift @gucs, [ 'shared_preload_libraries', 'pgss_ng' ]
	  unless grep { $_->[0] eq 'shared_preload_libraries' } @gucs;

	my $conf = '';
	for my $g (@gucs)
	{
		my ($k, $v) = @$g;
		$v = "'" . ($v =~ s/'/''/gr) . "'" unless $v =~ /^-?\d+$/;
		$conf .= "$k = $v\n";
	}
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{_init} // {} });
	$node->append_conf('postgresql.conf', $conf);
	$node->start if $opt{_start} // 1;
	return $node;
}

# create_wide_table($node, $table, $ncols)
#	An empty table $table with integer columns c1 .. c$ncols: statements
#	selecting different columns of it have different queryids, which is how
#	the tests make many distinct statement shapes (constants would be
#	normalized away).
sub create_wide_table
{
	my ($node, $table, $ncols) = @_;
	$node->safe_psql(
		'postgres', qq{
SELECT format('CREATE TABLE $table (%s)',
			  string_agg(format('c%s int', i), ', ' ORDER BY i))
FROM generate_series(1, $ncols) i \\gexec
});
	return;
}

# wait_for_clients_gone($node, $what)
#	Pass once no client backend but the polling one is left: a backend
#	leaves pg_stat_activity after its exit flush, so everything it counted
#	is then in the shared entries.  The poll runs with the caller's
#	environment (PGOPTIONS decides whether it is itself tracked).
sub wait_for_clients_gone
{
	my ($node, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			q{SELECT count(*) FROM pg_stat_activity
			  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()},
			'0'),
		$what);
	return;
}

# start_small_arena_node($name, %gucs)
#	pgss_node() with the smallest text arena (256 kB), top-level tracking
#	with utility statements, no planning and no stats file; %gucs (and
#	_init) are added after those settings.
sub start_small_arena_node
{
	my ($name, @gucs) = @_;
	return pgss_node(
		$name,
		'pgss_ng.max' => 5000,
		'pgss_ng.query_text_memory' => '256kB',
		'pgss_ng.track' => 'top',
		'pgss_ng.track_utility' => 'on',
		'pgss_ng.track_planning' => 'off',
		'pgss_ng.save' => 'off',
		@gucs);
}

# setup_alice_bob($node, $ncols)
#	CREATE EXTENSION pgss_ng, login roles alice and bob (who may SET
#	pgss_ng.track) and a wide table w of $ncols columns they may read.
sub setup_alice_bob
{
	my ($node, $ncols) = @_;
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION pgss_ng;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT SET ON PARAMETER pgss_ng.track TO alice, bob;
});
	create_wide_table($node, 'w', $ncols);
	$node->safe_psql('postgres', 'GRANT SELECT ON w TO alice, bob');
	return;
}

# crc32c($data)
#	CRC-32C (Castagnoli, reflected), as PostgreSQL's pg_crc32c computes
#	it: what the stats file's trailer holds, for tests that forge files.
my @crc_table;
for my $i (0 .. 255)
{
	my $c = $i;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$crc_table[$i] = $c;
}

sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8)
	  for unpack('C*', $data);
	return $crc ^ 0xFFFFFFFF;
}

# write_file($path, $data)
#	Write $data as raw bytes to $path, mode 0600 (as the server's files).
sub write_file
{
	my ($path, $data) = @_;
	open my $fh, '>:raw', $path or die "could not write $path: $!";
	print $fh $data;
	close $fh;
	chmod 0600, $path;
	return;
}

1;
