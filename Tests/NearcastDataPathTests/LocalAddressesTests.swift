import NearcastDataPath
import Testing

/// The addresses XDP answers queries to: what a listen address stands for (ARCHITECTURE §3).
@Suite(.timeLimit(.minutes(1))) struct LocalAddressesTests {
    @Test func addressesReadAndWriteAsText() throws {
        let v4 = try #require(LocalAddress("198.18.0.1"))
        #expect(v4.octets == [198, 18, 0, 1] && !v4.isIPv6 && v4.description == "198.18.0.1")
        let v6 = try #require(LocalAddress("2001:db8::1"))
        #expect(v6.isIPv6 && v6.octets.count == 16 && v6.description == "2001:db8::1")
        #expect(LocalAddress("example.test") == nil && LocalAddress("198.18.0.256") == nil)
        #expect(LocalAddress(octets: [1, 2, 3]) == nil)
    }

    /// Listed addresses are answered as they are; a wildcard of a family stands for every address
    /// of that family the host has, and only of that one (IPv6 sockets are IPv6-only).
    @Test func aWildcardStandsForTheHostsAddressesOfItsFamily() throws {
        let host: Set<LocalAddress> = [LocalAddress("127.0.0.1")!, LocalAddress("198.18.0.1")!, LocalAddress("::1")!]
        let listed = AnsweredAddresses(listed: [LocalAddress("198.18.0.9")!])
        #expect(listed.resolved(host: host) == [LocalAddress("198.18.0.9")!] && !listed.followsHost)
        let every4 = AnsweredAddresses(listed: [LocalAddress("2001:db8::5")!], everyIPv4: true)
        #expect(every4.followsHost)
        #expect(
            every4.resolved(host: host) == [
                LocalAddress("127.0.0.1")!, LocalAddress("198.18.0.1")!, LocalAddress("2001:db8::5")!,
            ])
        #expect(AnsweredAddresses(everyIPv6: true).resolved(host: host) == [LocalAddress("::1")!])
    }

    @Test func theHostsAddressesAreReadByInterface() {
        #expect(HostAddresses.current().contains(LocalAddress("127.0.0.1")!))
        #expect(HostAddresses.current(on: ["lo"]).contains(LocalAddress("127.0.0.1")!))
        #expect(HostAddresses.current(on: ["no-such-interface"]).isEmpty)
    }
}
