# t/lib/PgssNgWire.pm
#	A minimal client of PostgreSQL's frontend/backend protocol (version
#	3.0) over the node's Unix socket, for what libpq and psql cannot send:
#	an Execute with a row limit (a portal fetched in chunks, as JDBC's
#	fetchSize does) and a Bind whose parameter fails its input conversion
#	on every server version.  Trust authentication only (the test nodes').
#
#	my $c = PgssNgWire->connect($node, 'postgres', 'postgres');
#	$c->parse('s1', 'SELECT ...');  $c->bind('p1', 's1', @params);
#	$c->execute('p1', $max_rows);   $c->sync;
#	my $r = $c->results;   # until ReadyForQuery
#	$r->{rows} (array of arrays of text values), $r->{errors} (messages),
#	$r->{suspended} (PortalSuspended count), $r->{complete} (command tags)
#	my @row = $c->query_row('SELECT ...');   # simple query, first row
#	$c->close;
package PgssNgWire;

use strict;
use warnings;

use IO::Socket::UNIX;

sub connect
{
	my ($class, $node, $dbname, $user) = @_;
	my $path = $node->host . '/.s.PGSQL.' . $node->port;
	my $sock = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $path)
	  or die "PgssNgWire: cannot connect to $path: $!";
	binmode($sock);
	my $self = bless { sock => $sock }, $class;
	my $body = pack('N', 196608) . "user\0$user\0database\0$dbname\0\0";
	$self->_write(pack('N', 4 + length($body)) . $body);
	my $r = $self->results;
	die "PgssNgWire: start-up failed: @{$r->{errors}}" if @{ $r->{errors} };
	return $self;
}

sub _write
{
	my ($self, $bytes) = @_;
	my $off = 0;
	while ($off < length($bytes))
	{
		my $n = syswrite($self->{sock}, $bytes, length($bytes) - $off, $off);
		die "PgssNgWire: write: $!" unless defined $n;
		$off += $n;
	}
	return;
}

sub _read_exactly
{
	my ($self, $len) = @_;
	my $buf = '';
	while (length($buf) < $len)
	{
		my $n = sysread($self->{sock}, $buf, $len - length($buf), length($buf));
		die "PgssNgWire: read: " . (defined $n ? 'end of stream' : $!)
		  unless $n;
	}
	return $buf;
}

sub _msg
{
	my ($self, $type, $payload) = @_;
	$self->_write($type . pack('N', 4 + length($payload)) . $payload);
	return;
}

# parse($name, $query): a Parse message, parameter types left to the server
sub parse
{
	my ($self, $name, $query) = @_;
	$self->_msg('P', "$name\0$query\0" . pack('n', 0));
	return;
}

# bind($portal, $statement, @params): text parameters (undef: NULL), text
# results
sub bind
{
	my ($self, $portal, $stmt, @params) = @_;
	my $p = "$portal\0$stmt\0" . pack('n', 0) . pack('n', scalar @params);
	for my $v (@params)
	{
		$p .= defined $v ? pack('N', length($v)) . $v : pack('N', 0xFFFFFFFF);
	}
	$self->_msg('B', $p . pack('n', 0));
	return;
}

# execute($portal, $max_rows): 0 runs it to completion
sub execute
{
	my ($self, $portal, $max_rows) = @_;
	$self->_msg('E', "$portal\0" . pack('N', $max_rows));
	return;
}

sub close_portal
{
	my ($self, $portal) = @_;
	$self->_msg('C', "P$portal\0");
	return;
}

sub sync
{
	my ($self) = @_;
	$self->_msg('S', '');
	return;
}

# results: read messages until ReadyForQuery
sub results
{
	my ($self) = @_;
	my %r = (rows => [], errors => [], suspended => 0, complete => []);
	while (1)
	{
		my $type = $self->_read_exactly(1);
		my $len = unpack('N', $self->_read_exactly(4));
		my $body = $len > 4 ? $self->_read_exactly($len - 4) : '';
		if ($type eq 'Z')
		{
			last;
		}
		elsif ($type eq 'R')
		{
			my $code = unpack('N', $body);
			die "PgssNgWire: authentication $code requested (trust only)"
			  if $code != 0;
		}
		elsif ($type eq 'D')
		{
			my $n = unpack('n', $body);
			my $off = 2;
			my @row;
			for (1 .. $n)
			{
				my $l = unpack('N', substr($body, $off, 4));
				$off += 4;
				if ($l == 0xFFFFFFFF) { push @row, undef; next; }
				push @row, substr($body, $off, $l);
				$off += $l;
			}
			push @{ $r{rows} }, \@row;
		}
		elsif ($type eq 'E')
		{
			my %f = map { substr($_, 0, 1) => substr($_, 1) }
			  grep { length } split /\0/, $body;
			push @{ $r{errors} }, $f{M};
		}
		elsif ($type eq 's')
		{
			$r{suspended}++;
		}
		elsif ($type eq 'C')
		{
			push @{ $r{complete} }, $body =~ s/\0$//r;
		}
		# others (ParameterStatus, BackendKeyData, RowDescription,
		# ParseComplete, BindComplete, CloseComplete, NoticeResponse, ...)
		# are not needed
	}
	return \%r;
}

# query($sql): a simple query; its results
sub query
{
	my ($self, $sql) = @_;
	$self->_msg('Q', "$sql\0");
	return $self->results;
}

# query_row($sql): a simple query that must succeed; its first row
sub query_row
{
	my ($self, $sql) = @_;
	my $r = $self->query($sql);
	die "PgssNgWire: $sql: @{$r->{errors}}" if @{ $r->{errors} };
	return @{ $r->{rows}[0] // [] };
}

sub close
{
	my ($self) = @_;
	$self->_msg('X', '');
	close($self->{sock});
	return;
}

1;
