import CLibBPF

#if canImport(Glibc)
import Glibc
#endif

/// A BPF map, by file descriptor, with its key and value sizes checked on every call.
public struct BPFMap: Sendable {
    public let name: String
    public let fd: Int32
    public let keySize: Int
    public let valueSize: Int
    /// The map's capacity in entries.
    public let maxEntries: Int
    /// Per-CPU maps read and write one value per possible CPU.
    public let perCPU: Bool

    /// Number of possible CPUs (the per-CPU value count), from libbpf, which reads
    /// /sys/devices/system/cpu/possible: an error where that cannot be read (no /sys mounted).
    public static func possibleCPUs() throws(BPFError) -> Int {
        let n = libbpf_num_possible_cpus()
        guard n > 0 else {
            throw BPFError("count the possible CPUs", "/sys/devices/system/cpu/possible (is /sys mounted?)", errno: -n)
        }
        return Int(n)
    }

    /// Bytes of one value slot as the kernel copies them: per-CPU values are rounded up to 8.
    var slotSize: Int { perCPU ? (valueSize + 7) & ~7 : valueSize }

    func check(_ key: [UInt8], _ op: String) throws(BPFError) {
        guard key.count == keySize else {
            throw BPFError(op, "\(name): key of \(key.count) bytes, map takes \(keySize)", errno: EINVAL)
        }
    }

    /// Writes one value (for per-CPU maps: the same value on every CPU).
    public func update(key: [UInt8], value: [UInt8]) throws(BPFError) {
        try check(key, "update")
        guard value.count == valueSize else {
            throw BPFError("update", "\(name): value of \(value.count) bytes, map takes \(valueSize)", errno: EINVAL)
        }
        var bytes = value
        if perCPU {
            bytes = []
            for _ in 0..<(try Self.possibleCPUs()) {
                bytes += value + [UInt8](repeating: 0, count: slotSize - valueSize)
            }
        }
        let rc = key.withUnsafeBytes { k in
            bytes.withUnsafeBytes { v in bpf_map_update_elem(fd, k.baseAddress, v.baseAddress, UInt64(BPF_ANY)) }
        }
        if rc != 0 { throw BPFError("update", name, errno: errno) }
    }

    /// Writes many entries with one `BPF_MAP_UPDATE_BATCH` call per chunk where the kernel and map
    /// type allow it (hash and array maps, kernel 5.6+), entry by entry otherwise. Not for per-CPU maps.
    public func updateBatch(keys: [[UInt8]], values: [[UInt8]], chunk: Int = 4096) throws(BPFError) {
        precondition(keys.count == values.count, "one value per key")
        var start = 0
        while start < keys.count {
            let end = min(start + chunk, keys.count)
            var flatKeys: [UInt8] = []
            var flatValues: [UInt8] = []
            flatKeys.reserveCapacity((end - start) * keySize)
            flatValues.reserveCapacity((end - start) * valueSize)
            for i in start..<end {
                try check(keys[i], "update")
                guard values[i].count == valueSize else {
                    throw BPFError(
                        "update", "\(name): value of \(values[i].count) bytes, map takes \(valueSize)", errno: EINVAL)
                }
                flatKeys += keys[i]
                flatValues += values[i]
            }
            try updateBatch(flatKeys: flatKeys, flatValues: flatValues, count: end - start)
            start = end
        }
    }

    /// Writes entries first..<first + n of an array map from `values`, n values of `valueSize` bytes
    /// one after another: for arrays of millions of entries, without an array per entry.
    public func writeArray(_ values: [UInt8], startingAt first: Int = 0, chunk: Int = 65_536) throws(BPFError) {
        guard values.count % valueSize == 0, first >= 0, first + values.count / valueSize <= maxEntries else {
            throw BPFError(
                "write array",
                "\(name): \(values.count) bytes are not whole values of \(valueSize) within \(maxEntries)",
                errno: EINVAL)
        }
        precondition(keySize == 4, "array maps have 4-byte keys")
        let total = values.count / valueSize
        var start = 0
        while start < total {
            let end = min(start + chunk, total)
            var keys: [UInt8] = []
            keys.reserveCapacity((end - start) * 4)
            for i in UInt32(first + start)..<UInt32(first + end) { withUnsafeBytes(of: i) { keys += $0 } }
            try updateBatch(
                flatKeys: keys, flatValues: Array(values[(start * valueSize)..<(end * valueSize)]), count: end - start)
            start = end
        }
    }

    /// One BPF_MAP_UPDATE_BATCH of `count` entries, keys and values each one after another; entry by
    /// entry where the kernel or map type has no batch operations.
    func updateBatch(flatKeys: [UInt8], flatValues: [UInt8], count n: Int) throws(BPFError) {
        precondition(!perCPU, "batch updates take one value per key")
        var count = UInt32(n)
        var opts = bpf_map_batch_opts()
        opts.sz = optionsSize(bpf_map_batch_opts.self, endingWith: \.flags, 8)
        opts.elem_flags = UInt64(BPF_ANY)
        let rc = flatKeys.withUnsafeBytes { k in
            flatValues.withUnsafeBytes { v in bpf_map_update_batch(fd, k.baseAddress, v.baseAddress, &count, &opts) }
        }
        guard rc != 0 else { return }
        let err = errno
        guard err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP || err == ENOSYS, count == 0 else {
            throw BPFError("batch update", name, errno: err)
        }
        // No batch operations here: one by one.
        for i in 0..<n {
            try update(
                key: Array(flatKeys[(i * keySize)..<((i + 1) * keySize)]),
                value: Array(flatValues[(i * valueSize)..<((i + 1) * valueSize)]))
        }
    }

    /// Puts `inner` in slot `index` of this map-in-map (the kernel keeps a reference to it).
    public func setInner(_ index: UInt32, to inner: BPFMap) throws(BPFError) {
        try update(
            key: withUnsafeBytes(of: index) { Array($0) },
            value: withUnsafeBytes(of: UInt32(bitPattern: inner.fd)) { Array($0) })
    }

    /// Deletes one key; a missing key is not an error.
    public func delete(key: [UInt8]) throws(BPFError) {
        try check(key, "delete")
        let rc = key.withUnsafeBytes { bpf_map_delete_elem(fd, $0.baseAddress) }
        if rc != 0 && errno != ENOENT { throw BPFError("delete", name, errno: errno) }
    }

    /// Every key in the map (a snapshot: entries may change while it is taken).
    public func keys() throws(BPFError) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var next = [UInt8](repeating: 0, count: keySize)
        var rc = next.withUnsafeMutableBytes { bpf_map_get_next_key(fd, nil, $0.baseAddress) }
        while rc == 0 {
            out.append(next)
            let current = next
            rc = current.withUnsafeBytes { c in
                next.withUnsafeMutableBytes { bpf_map_get_next_key(fd, c.baseAddress, $0.baseAddress) }
            }
        }
        if errno != ENOENT { throw BPFError("list keys", name, errno: errno) }
        return out
    }

    /// The value of `key` (per-CPU maps: one value per CPU), or nil when absent.
    public func lookup(key: [UInt8]) throws(BPFError) -> [[UInt8]]? {
        try check(key, "lookup")
        let slots = perCPU ? try Self.possibleCPUs() : 1
        var out = [UInt8](repeating: 0, count: slotSize * slots)
        let rc = key.withUnsafeBytes { k in
            out.withUnsafeMutableBytes { bpf_map_lookup_elem(fd, k.baseAddress, $0.baseAddress) }
        }
        if rc != 0 {
            if errno == ENOENT { return nil }
            throw BPFError("lookup", name, errno: errno)
        }
        return (0..<slots).map { Array(out[($0 * slotSize)..<($0 * slotSize + valueSize)]) }
    }

    /// The first `count` counters of a per-CPU ARRAY whose values are 64-bit counters (one an
    /// entry, or a block of them: counter i is entry i / block's counter i % block), each summed
    /// over the CPUs: read in one BPF_MAP_LOOKUP_BATCH call a chunk of entries (kernel 5.6+),
    /// entry by entry where the kernel has no batch lookup.
    public func counterSums(count: Int, chunk: Int = 8192) throws(BPFError) -> [UInt64] {
        precondition(
            perCPU && keySize == 4 && valueSize > 0 && valueSize % 8 == 0, "\(name): not a per-CPU array of counters")
        let cpus = try Self.possibleCPUs()
        let block = valueSize / 8
        let wanted = min(count, maxEntries * block)
        let entries = (wanted + block - 1) / block
        var sums = [UInt64](repeating: 0, count: wanted)
        func add(entry: Int, _ counters: UnsafeBufferPointer<UInt64>) {
            for j in 0..<block where entry * block + j < wanted { sums[entry * block + j] &+= counters[j] }
        }
        var start = 0
        while start < entries {
            let n = min(chunk, entries - start)
            var values = [UInt64](repeating: 0, count: n * cpus * block)
            var keys = [UInt32](repeating: 0, count: n)
            // The batch goes on after the key given (the last one read): none for the first.
            var inKey = UInt32(truncatingIfNeeded: start - 1)
            var outKey: UInt32 = 0
            var got = UInt32(n)
            var opts = bpf_map_batch_opts()
            opts.sz = MemoryLayout<bpf_map_batch_opts>.size
            let rc = values.withUnsafeMutableBytes { v in
                keys.withUnsafeMutableBytes { k in
                    withUnsafeMutablePointer(to: &inKey) { after in
                        bpf_map_lookup_batch(
                            fd, start == 0 ? nil : after, &outKey, k.baseAddress, v.baseAddress, &got, &opts)
                    }
                }
            }
            if rc != 0 && errno != ENOENT {
                // No batch lookup for this map here (524: the kernel's ENOTSUPP): entry by entry.
                guard errno == EINVAL || errno == ENOTSUP || errno == 524 else {
                    throw BPFError("read counters", name, errno: errno)
                }
                for i in start..<entries {
                    for cpu in try lookup(key: withUnsafeBytes(of: UInt32(i)) { Array($0) }) ?? [] {
                        cpu.withUnsafeBytes { raw in
                            raw.withMemoryRebound(to: UInt64.self) { add(entry: i, $0) }
                        }
                    }
                }
                return sums
            }
            values.withUnsafeBufferPointer { v in
                for i in 0..<Int(got) where Int(keys[i]) < entries {
                    for c in 0..<cpus {
                        add(entry: Int(keys[i]), UnsafeBufferPointer(rebasing: v[((i * cpus + c) * block)...]))
                    }
                }
            }
            guard got > 0 else { break }
            start = Int(keys[Int(got) - 1]) + 1
        }
        return sums
    }
}

/// A loaded BPF program, by file descriptor.
public struct BPFProgram: Sendable {
    public let name: String
    public let fd: Int32

    /// The kernel's ID of the program (what bpftool and perf's symbols name it by).
    public func id() throws(BPFError) -> UInt32 {
        var info = bpf_prog_info()
        var length = UInt32(MemoryLayout<bpf_prog_info>.size)
        let rc = bpf_obj_get_info_by_fd(fd, &info, &length)
        if rc != 0 { throw BPFError("get program info", name, errno: rc) }
        return info.id
    }

    /// What one BPF_PROG_TEST_RUN gave back.
    public struct TestRun: Sendable {
        /// The program's return value (for XDP: the action).
        public var returnValue: UInt32
        /// The packet as the program left it.
        public var data: [UInt8]
        /// Mean nanoseconds per run, as the kernel measured it.
        public var duration: UInt32
    }

    /// Runs the program on `packet` with BPF_PROG_TEST_RUN, `repeat` times on the same buffer.
    public func testRun(_ packet: [UInt8], repeat count: UInt32 = 1) throws(BPFError) -> TestRun {
        var input = packet
        var output = [UInt8](repeating: 0, count: packet.count + 4096)
        var opts = bpf_test_run_opts()
        opts.sz = optionsSize(bpf_test_run_opts.self, endingWith: \.batch_size, 4)
        opts.repeat = Int32(clamping: count)
        let rc: Int32 = input.withUnsafeMutableBytes { inp in
            output.withUnsafeMutableBytes { outp in
                opts.data_in = UnsafeRawPointer(inp.baseAddress)
                opts.data_size_in = UInt32(inp.count)
                opts.data_out = outp.baseAddress
                opts.data_size_out = UInt32(outp.count)
                return bpf_prog_test_run_opts(fd, &opts)
            }
        }
        if rc != 0 { throw BPFError("test run", name, errno: errno) }
        return TestRun(
            returnValue: opts.retval, data: Array(output.prefix(Int(opts.data_size_out))), duration: opts.duration)
    }
}
