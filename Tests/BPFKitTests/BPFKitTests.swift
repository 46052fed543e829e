import BPFKit
import Foundation
import NearcastTestSupport
import Testing

/// BPFKit on the real kernel, with the small pass-through program (tools/bpf/xdp_pass.bpf.o) and
/// an object of test maps (tools/bpf/kit_maps.bpf.o); nothing here depends on nearcast's ABI.
@Suite(.timeLimit(.minutes(1))) struct BPFKitTests {
    static let build = Repository.root.appendingPathComponent(".build/bpf")
    static var passObject: String { build.appendingPathComponent("xdp_pass.bpf.o").path }
    static var mapsObject: String { build.appendingPathComponent("kit_maps.bpf.o").path }

    @Test func loadsAProgramAndRunsIt() throws {
        let object = try BPFObject(path: Self.passObject)
        let program = try object.program("xdp_pass")
        let frame = [UInt8](repeating: 0xAB, count: 64)
        let run = try program.testRun(frame)
        #expect(run.returnValue == 2)  // XDP_PASS
        #expect(run.data == frame)
        #expect(object.verifiedInstructions != nil)
    }

    @Test func errorsNameTheOperationAndTheSubject() {
        #expect(throws: BPFError.self) { try BPFObject(path: "/nonexistent/x.bpf.o") }
        do {
            _ = try BPFObject(path: "/nonexistent/x.bpf.o")
        } catch {
            #expect(error.operation == "open" && error.subject == "/nonexistent/x.bpf.o" && error.errno == ENOENT)
            #expect(error.description.contains("No such file or directory"))
        }
        do {
            let object = try BPFObject(path: Self.passObject)
            _ = try object.program("no_such_program")
            Issue.record("a missing program must be an error")
        } catch {
            #expect(error.operation == "find program" && error.subject == "no_such_program")
        }
    }

    @Test func mapSizesAreCheckedAgainstTheObject() throws {
        let object = try BPFObject(path: Self.mapsObject)
        #expect(throws: BPFError.self) { try object.map("kit_array", keySize: 4, valueSize: 4) }
        let config = try object.map("kit_array", keySize: 4, valueSize: 8)
        #expect(throws: BPFError.self) { try config.update(key: [0, 0], value: [UInt8](repeating: 0, count: 8)) }
        #expect(throws: BPFError.self) { try config.update(key: [0, 0, 0, 0], value: [1]) }
    }

    @Test func hashMapsUpdateInBatchesListAndDelete() throws {
        let object = try BPFObject(path: Self.mapsObject)
        let map = try object.map("kit_hash", keySize: 36, valueSize: 1040)
        let keys = (0..<300).map { i in [UInt8(i & 0xFF), UInt8(i >> 8)] + [UInt8](repeating: 0, count: 34) }
        let values = keys.map { $0.prefix(2) + [UInt8](repeating: 7, count: 1038) }.map(Array.init)
        try map.updateBatch(keys: keys, values: values, chunk: 128)
        #expect(Set(try map.keys()) == Set(keys))
        #expect(try map.lookup(key: keys[42]) == [values[42]])
        try map.delete(key: keys[42])
        try map.delete(key: keys[42])  // absent: not an error
        #expect(try map.lookup(key: keys[42]) == nil)
        #expect(try map.keys().count == 299)
    }

    @Test func mapsCanBeSizedBeforeTheyAreCreated() throws {
        let object = try BPFObject(path: Self.mapsObject, maxEntries: ["kit_array": 4096])
        let map = try object.map("kit_array", keySize: 4, valueSize: 8)
        #expect(map.maxEntries == 4096)
        try map.update(key: [0xFF, 0x0F, 0, 0], value: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try map.lookup(key: [0xFF, 0x0F, 0, 0]) == [[1, 2, 3, 4, 5, 6, 7, 8]])
        #expect(throws: BPFError.self) { try BPFObject(path: Self.mapsObject, maxEntries: ["no_such_map": 1]) }
    }

    /// The maps made by one object (no program loaded) and the program loaded by another against
    /// them: the second makes no maps of its own, so what is written through one is read through
    /// the other, at the size the first was given.
    @Test func aProgramIsLoadedAgainstTheMapsOfAnotherObject() throws {
        let maps = try BPFObject(path: Self.mapsObject, maxEntries: ["kit_array": 4096], programs: false)
        #expect(maps.verifiedInstructions == nil)
        #expect(try maps.program("kit_maps").fd < 0, "no program is loaded with the maps")
        let loaded = try BPFObject(path: Self.mapsObject, reusingMapsOf: maps)
        #expect(loaded.verifiedInstructions != nil)
        #expect(try loaded.program("kit_maps").testRun([UInt8](repeating: 0, count: 64)).returnValue == 2)
        let written = try maps.map("kit_array", keySize: 4, valueSize: 8)
        let read = try loaded.map("kit_array", keySize: 4, valueSize: 8)
        #expect(read.maxEntries == 4096)
        try written.update(key: [7, 0, 0, 0], value: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try read.lookup(key: [7, 0, 0, 0]) == [[1, 2, 3, 4, 5, 6, 7, 8]])
    }

    @Test func theGracePeriodWaitWorksOnThisKernel() throws {
        try BPFGracePeriod.wait()
    }

    @Test func perCPUMapsReadOneValuePerCPU() throws {
        let object = try BPFObject(path: Self.mapsObject)
        let map = try object.map("kit_percpu", keySize: 4, valueSize: 104)
        #expect(map.perCPU)
        let values = try #require(try map.lookup(key: [0, 0, 0, 0]))
        #expect(try values.count == BPFMap.possibleCPUs())
        #expect(values.allSatisfy { $0 == [UInt8](repeating: 0, count: 104) })
    }

    /// Counters in a per-CPU array are read summed over the CPUs, in batches (here of 4,096,
    /// so the entries cross two of them), up to the count asked.
    @Test func perCPUCountersAreSummedInBatches() throws {
        let object = try BPFObject(path: Self.mapsObject)
        let map = try object.map("kit_counters", keySize: 4, valueSize: 8)
        let cpus = UInt64(try BPFMap.possibleCPUs())
        // An update writes its value on every CPU.
        for (i, v) in [(0, UInt64(3)), (4095, 5), (4096, 7), (9000, 11), (9999, 13)] {
            try map.update(
                key: withUnsafeBytes(of: UInt32(i)) { Array($0) }, value: withUnsafeBytes(of: v) { Array($0) })
        }
        let sums = try map.counterSums(count: 9001, chunk: 4096)
        #expect(sums.count == 9001)
        #expect(sums[0] == 3 * cpus && sums[4095] == 5 * cpus && sums[4096] == 7 * cpus && sums[9000] == 11 * cpus)
        #expect(sums.enumerated().filter { $0.element != 0 }.map(\.offset) == [0, 4095, 4096, 9000])
        #expect(try map.counterSums(count: 20000).count == 10000, "at most the map's entries")
    }

    /// Counters kept in blocks (an entry's value holds several) are read as one run of counters:
    /// counter i is entry i / block's counter i % block, summed over the CPUs, across batches.
    @Test func perCPUCountersInBlocksAreReadAsOneRun() throws {
        let object = try BPFObject(path: Self.mapsObject)
        let map = try object.map("kit_counter_blocks", keySize: 4, valueSize: 32)
        let cpus = UInt64(try BPFMap.possibleCPUs())
        // Entry e holds counters 4e..4e+3; counter i is set to i + 1 in the entries written.
        for e in [0, 1, 127, 128, 299] {
            let block = (0..<4).map { UInt64(e * 4 + $0 + 1) }
            try map.update(
                key: withUnsafeBytes(of: UInt32(e)) { Array($0) }, value: block.withUnsafeBytes { Array($0) })
        }
        let sums = try map.counterSums(count: 1198, chunk: 128)
        #expect(sums.count == 1198, "a count that ends inside a block")
        let set = Set([0, 1, 127, 128, 299].flatMap { e in (e * 4)..<(e * 4 + 4) }).filter { $0 < 1198 }
        #expect(sums.indices.allSatisfy { sums[$0] == (set.contains($0) ? UInt64($0 + 1) * cpus : 0) })
        #expect(try map.counterSums(count: 5000).count == 1200, "at most the map's counters")
    }
}
