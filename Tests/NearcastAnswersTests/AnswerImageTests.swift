import DNSWire
import Foundation
import NearcastBasics
import NearcastDNSSEC
import NearcastTestSupport
import Synchronization
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// The answer image made on several threads (ParallelWork) is the one made on one, for a zone of
/// every kind of name; the threads run at the priority of the one that asked.
@Suite(.timeLimit(.minutes(2))) struct AnswerImageTests {
    /// 4,000 names of every kind: addresses, a CNAME chain, MX and their targets' addresses, a
    /// wildcard and names below it, a delegation with glue, a DNAME, empty non-terminals.
    static func zone() throws -> Zone {
        var text = """
            ns1 A 192.0.2.53
            *.wild TXT "any"
            sub NS ns.sub
            ns.sub A 192.0.2.54
            dn DNAME other.test.

            """
        for i in 0..<1000 {
            text += "n\(i) A 10.0.\(i / 256).\(i % 256)\n"
            text += "alias\(i) CNAME n\(i)\n"
            text += "m\(i).ent\(i % 7) MX 10 n\(i)\n"
            text += "t\(i).wild AAAA 2001:db8::\(i)\n"
        }
        return try built(text)
    }

    /// The zone of `records` (master-file lines) under example.test.'s SOA and NS.
    static func built(_ records: String) throws -> Zone {
        let origin = try DNSName("example.test.")
        let text = """
            $ORIGIN example.test.
            $TTL 300
            @ SOA ns1 hostmaster 1 3600 600 1209600 60
            @ NS ns1

            """ + records
        return try Zone.build(
            origin: origin, records: try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: origin),
            sourceName: "z.zone")
    }

    @Test func anImageMadeOnSeveralThreadsIsTheOneMadeOnOne() async throws {
        let responder = Responder(authority: Authority(zones: [try Self.zone()]))
        let one = try await TestSupport.blocking { AnswerImage.build(responder: responder, maxSections: 512) }
        let three = try await TestSupport.blocking {
            AnswerImage.build(responder: responder, maxSections: 512, parts: 3)
        }
        #expect(one.names.count > 4000 && one.names.contains { !$0.answers.isEmpty && $0.nxdomain })
        #expect(one.names == three.names && one.tooBig == three.tooBig)
    }

    /// The image's stream hands on every name the image holds, once, each as the image has it,
    /// whatever the threads: a zone large enough to share is cut between them, small zones are
    /// taken in turn; its negative answers are those the image's anchors hold.
    @Test func theStreamHandsOnEveryNameOfTheImageOnce() async throws {
        var zones = [try Self.zone()]
        for k in 0..<5 {
            let origin = try DNSName("small\(k).test.")
            let text = """
                $ORIGIN small\(k).test.
                @ 300 SOA ns hostmaster 1 3600 600 1209600 60
                @ 300 NS ns
                ns 300 A 192.0.2.\(k)

                """
            zones.append(
                try Zone.build(
                    origin: origin, records: try ZoneFileParser.parse(text: text, fileName: "s.zone", origin: origin),
                    sourceName: "s.zone"))
        }
        let responder = Responder(authority: Authority(zones: zones))
        let image = try await TestSupport.blocking { AnswerImage.build(responder: responder, maxSections: 512) }
        for parts in [1, 2, 3] {
            let stream = AnswerImage.Stream(responder: responder, maxSections: 512)
            let (sinks, tooBig) = try await TestSupport.blocking {
                stream.run(parts: parts, sink: { _ in [AnswerImage.Name]() }) { $0.append($1) }
            }
            #expect(sinks.count == parts && stream.count == image.names.count && tooBig == image.tooBig)
            let byName = { (names: [AnswerImage.Name]) in names.sorted { $0.name.lexicographicallyPrecedes($1.name) } }
            #expect(byName(sinks.flatMap { $0 }) == byName(image.names), "\(parts) threads")
            if parts > 1 { #expect(sinks.allSatisfy { !$0.isEmpty }, "every thread makes names") }
            let anchors = Dictionary(
                uniqueKeysWithValues: image.names.compactMap { n in n.negative.map { (n.name, $0) } })
            let streamed = Dictionary(uniqueKeysWithValues: stream.negatives.map { ($0.name, $0.negative) })
            #expect(anchors.count >= 6 && streamed == anchors)
        }
    }

    /// The image asks its questions of the zone directly (`Responder.plainReply`), without a query
    /// written and parsed: each reply is the one the query would get, for every name and type
    /// of a zone of every kind of name, names below them and types they lack included.
    @Test func aPlainQuestionAskedOfTheZoneIsAnsweredAsTheQuery() throws {
        let zone = try Self.zone()
        let responder = Responder(authority: Authority(zones: [zone]))
        var asked = 0
        for name in zone.existingNamesUnordered.sorted(by: DNSName.wireOrder).prefix(1500) {
            let below = try name.prepending(Array("x".utf8))
            for n in [name, below] {
                for type in Set(zone.types(at: name) + [.a, .aaaa, .https, .cname, .ns, .soa, .ds, .any, .axfr]) {
                    let query = AnswerImage.plainQuery(n, type)
                    #expect(
                        responder.plainReply(n, type, zone: zone) == responder.respond(to: query, transport: .tcp),
                        "\(n) \(type)")
                    asked += 1
                }
            }
        }
        #expect(asked > 20000)
    }

    /// The answers the image writes from their RRsets (`plainAnswer`) are the responder's, byte
    /// for byte, for every type that is written so: several records to a set, TXT of several
    /// strings, CAA, data of types kept as bytes, a DNAME at its owner, names of any case; the
    /// names a delegation or a DNAME answers otherwise are left to the responder.
    @Test func anAnswerWrittenFromItsRRsetIsTheResponders() throws {
        var text = """
            @ CAA 0 issue "ca.example"
            ns1 A 192.0.2.53
            sub NS ns.sub
            ns.sub A 192.0.2.54
            dn DNAME other.test.
            Mixed.Case 60 A 192.0.2.7
            Mixed.Case TXT "one" "two" ""
            raw TYPE65280 \\# 3 010203
            raw SSHFP 1 1 0123456789abcdef0123456789abcdef01234567
            long TXT "\(String(repeating: "x", count: 255))" "\(String(repeating: "y", count: 255))"

            """
        for i in 0..<300 {
            text += "n\(i) A 10.0.\(i / 256).\(i % 256)\nn\(i) A 10.1.\(i / 256).\(i % 256)\n"
            text += "n\(i) AAAA 2001:db8::\(i)\n"
            text += "m\(i) MX 10 n\(i)\n"
        }
        let zone = try Self.built(text)
        let responder = Responder(authority: Authority(zones: [zone]))
        var written: [RRType: Int] = [:]
        for name in zone.existingNamesUnordered {
            let node = try #require(zone.node(at: name))
            let (sets, asTheyAre) = (node.sets, node.asTheyAre)
            #expect(asTheyAre == !["ns.sub.example.test.", "sub.example.test."].contains(name.description), "\(name)")
            for set in sets where asTheyAre {
                let byResponder = AnswerImage.answer(
                    name: name.lowercased(), type: set.type, responder: responder, from: nil, maxSections: 1024)
                guard let own = AnswerImage.plainAnswer(set, owner: name.lowercased(), maxSections: 1024) else {
                    #expect(
                        [RRType.ns, .mx, .soa].contains(set.type), "\(name) \(set.type) is written by the responder")
                    continue
                }
                #expect(own == byResponder, "\(name) \(set.type)")
                written[set.type, default: 0] += 1
            }
        }
        #expect(written[.a] == 302 && written[.aaaa] == 300 && written[.txt] == 2)
        #expect(written[.caa] == 1 && written[.dname] == 1 && written[RRType(65280)] == 1 && written[RRType(44)] == 1)
        // Too big is too big either way.
        let long = try #require(zone.rrset(try DNSName("long.example.test."), .txt))
        #expect(AnswerImage.plainAnswer(long, owner: long.name, maxSections: 100) == .some(nil))
        #expect(
            AnswerImage.answer(name: long.name, type: .txt, responder: responder, from: nil, maxSections: 100)
                == .some(nil))
    }

    /// The same kinds of RRset in a zone signed (NSEC, one ECDSA key): each that answers as it
    /// is, written with its signatures (`plainSignedAnswer`), is the responder's answer to the
    /// question with the DO bit, byte for byte, less the reply's OPT; and a NODATA's proof
    /// written from the name's NSEC (`nsecDenial`) is the one taken from the responder's NODATA.
    @Test func aSignedAnswerWrittenFromItsRRsetIsTheResponders() throws {
        var text = """
            @ CAA 0 issue "ca.example"
            ns1 A 192.0.2.53
            sub NS ns.sub
            ns.sub A 192.0.2.54
            Mixed.Case 60 A 192.0.2.7
            Mixed.Case TXT "one" "two" ""
            raw TYPE65280 \\# 3 010203

            """
        for i in 0..<50 { text += "n\(i) A 10.0.0.\(i)\nn\(i) A 10.1.0.\(i)\nn\(i) AAAA 2001:db8::\(i)\n" }
        let now = UInt32(Date().timeIntervalSince1970)
        let signer = ZoneSigner(
            keys: [DNSSECKey.generate(zone: try DNSName("example.test."))], inception: now - 3600,
            expiration: now + 86400)
        let zone = try signer.signWhole(try Self.built(text))
        #expect(zone.isSigned)
        let responder = Responder(authority: Authority(zones: [zone]))
        var written: [RRType: Int] = [:]
        for name in zone.existingNamesUnordered {
            let node = try #require(zone.node(at: name))
            let signatures = node.sets.first { $0.type == .rrsig }
            for set in node.sets where node.asTheyAre && set.type != .rrsig {
                guard
                    let own = AnswerImage.plainSignedAnswer(
                        set, signatures: signatures, owner: name.lowercased(), maxSections: 1024)
                else { continue }
                let byResponder = AnswerImage.answer(
                    name: name.lowercased(), type: set.type, responder: responder, from: zone, maxSections: 1024,
                    dnssec: true)
                #expect(own == byResponder, "\(name) \(set.type)")
                written[set.type, default: 0] += 1
            }
        }
        // A NODATA's proof written from the name's NSEC is the one taken from the responder's reply.
        let context = AnswerImage.ZoneContext(zone, responder: responder, maxSections: 1024)
        var proofs = 0
        for name in zone.existingNamesUnordered {
            let node = try #require(zone.node(at: name))
            // (Its anchor's SOA part: the apex's, or ns1's own, whose MNAME it is.)
            let soa = try #require(context.negatives[context.anchors.closest(name.lowercased())]?.signed)
            guard node.asTheyAre,
                let own = AnswerImage.nsecDenial(
                    node, signatures: node.sets.first { $0.type == .rrsig }, name: name.lowercased(), soa, context,
                    maxSections: 1024)
            else { continue }
            let asked = AnswerImage.signedDenial(
                name.lowercased(), soa, responder: responder, from: zone, maxSections: 1024)
            #expect(own == asked, "\(name)")
            proofs += 1
        }
        #expect(proofs > 50)
        #expect(written[.a] == 52 && written[.aaaa] == 50 && written[.txt] == 1 && written[.nsec, default: 0] > 50)
        #expect(written[.caa] == 1 && written[RRType(65280)] == 1 && written[.dnskey] == 1)
    }

    @Test func workIsCutInOrderAndRunAtTheCallersPriority() throws {
        let result = Mutex<[[Int32]]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 7)
            let slices = ParallelWork.map(Array(0..<10_000), parts: 4, smallest: 1000) { slice in
                [getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), Int32(slice.first!), Int32(slice.count)]
            }
            result.withLock { $0 = slices }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        let slices = result.withLock { $0 }
        #expect(slices.map { $0[0] } == [7, 7, 7, 7], "every slice's thread niced as the caller")
        #expect(slices.map { $0[1] } == [0, 2500, 5000, 7500] && slices.allSatisfy { $0[2] == 2500 })
        #expect(ParallelWork.map(Array(0..<10), parts: 4) { Array($0) } == [Array(0..<10)], "too few to cut")
    }
}
