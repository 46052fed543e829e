#!/usr/bin/perl
# Writes a MaxMind City-shaped database from a JSON description (tools/geo/test-city.json) with
# MaxMind's own writer (Debian: libmaxmind-db-writer-perl), for the tests: they read it back
# through libmaxminddb like a production GeoIP2/GeoLite2 City database.
#
#   tools/make-test-mmdb.pl tools/geo/test-city.json .build/geo/test-city.mmdb
use strict;
use warnings;
use JSON::PP;
use MaxMind::DB::Writer::Tree;

die "usage: $0 FIXTURE.json OUT.mmdb\n" unless @ARGV == 2;
my ( $in, $out ) = @ARGV;

open my $fh, '<', $in or die "$in: $!\n";
my $fixture = decode_json( do { local $/; <$fh> } );
close $fh;

# The record types of GeoIP2 City, for the keys the test data uses.
my %types = (
    city         => 'map',
    continent    => 'map',
    country      => 'map',
    location     => 'map',
    subdivisions => [ 'array', 'map' ],
    names        => 'map',
    en           => 'utf8_string',
    code         => 'utf8_string',
    iso_code     => 'utf8_string',
    latitude     => 'double',
    longitude    => 'double',
    geoname_id   => 'uint32',
);

my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version            => 6,
    record_size           => 28,
    database_type         => 'nearcast-Test-City',
    languages             => ['en'],
    description           => { en => 'nearcast test City database' },
    map_key_type_callback => sub { $types{ $_[0] } },
    alias_ipv6_to_ipv4    => 1,    # ::ffff:0:0/96 and 2002::/16, as MaxMind's own databases
    remove_reserved_networks => 0,    # the fixture uses documentation ranges
);

my $id = 1;
for my $n ( @{ $fixture->{networks} } ) {
    my %record;
    my $c = defined $n->{city} ? $fixture->{cities}{ $n->{city} } : $n;
    die "$in: network $n->{network}: unknown city $n->{city}\n" unless $c;
    $record{country}   = { iso_code => $c->{country} }  if $c->{country};
    $record{continent} = { code     => $c->{continent} } if $c->{continent};
    if ( defined $n->{city} ) {
        $record{city}         = { geoname_id => $id++, names => { en => $n->{city} } };
        $record{location}     = { latitude => 0.0 + $c->{latitude}, longitude => 0.0 + $c->{longitude} };
        $record{subdivisions} = [ { iso_code => $c->{subdivision} } ] if $c->{subdivision};
    }
    $tree->insert_network( $n->{network}, \%record );
}

open my $outfh, '>:raw', $out or die "$out: $!\n";
$tree->write_tree($outfh);
close $outfh or die "$out: $!\n";
