#if canImport(Glibc)
import Glibc
#endif

/// The values of an ARRAY map made with BPF_F_MMAPABLE, mapped into this process: bytes written
/// here are what a BPF program reads at once, with no system call and no copy of a whole value.
/// The mapping lasts as long as this object; the map itself lives on while anything holds it.
public final class BPFMappedArray: @unchecked Sendable {
    public let map: BPFMap
    /// The values, `maxEntries × valueSize` bytes, the first at offset 0.
    public let count: Int
    private let base: UnsafeMutableRawPointer

    /// Maps `map`'s values (read and write). The map must be an mmapable ARRAY whose value size
    /// is a multiple of 8 (the kernel's element stride).
    public init(_ map: BPFMap) throws(BPFError) {
        precondition(map.valueSize % 8 == 0, "\(map.name): mmapable values are laid out 8-aligned")
        count = map.valueSize * map.maxEntries
        let length = (count + Int(getpagesize()) - 1) & ~(Int(getpagesize()) - 1)
        guard let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, map.fd, 0), p != MAP_FAILED else {
            throw BPFError("mmap", map.name, errno: errno)
        }
        self.map = map
        base = p
    }

    deinit {
        let length = (count + Int(getpagesize()) - 1) & ~(Int(getpagesize()) - 1)
        munmap(base, length)
    }

    /// Copies `bytes` to `offset`. No BPF program may be reading that range (the caller's
    /// protocol says which ranges are in use).
    public func write(_ bytes: [UInt8], at offset: Int) {
        bytes.withUnsafeBytes { write($0, at: offset) }
    }

    /// Copies `bytes` to `offset`, as `write(_:at:)` does, from memory of any type (a table of
    /// words written whole, without a copy as octets first).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset + bytes.count <= count, "\(map.name): write past the map")
        guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
        (base + offset).copyMemory(from: from, byteCount: bytes.count)
    }

    /// The whole mapping, for a writer that fills many ranges at once (from several threads,
    /// each its own ranges). No BPF program may be reading the ranges written.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// `length` bytes from `offset`.
    public func read(at offset: Int, length: Int) -> [UInt8] {
        precondition(offset >= 0 && length >= 0 && offset + length <= count, "\(map.name): read past the map")
        return [UInt8](UnsafeRawBufferPointer(start: base + offset, count: length))
    }

    /// Whether the bytes from `offset` are `bytes`, compared where they are (no copy).
    public func holds(_ bytes: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, offset + bytes.count <= count else { return false }
        return bytes.withUnsafeBytes { UnsafeRawBufferPointer(start: base + offset, count: $0.count).elementsEqual($0) }
    }

    /// The 8-octet word at `offset` (8-aligned), read with one load.
    public func word(at offset: Int) -> UInt64 {
        precondition(offset >= 0 && offset % 8 == 0 && offset + 8 <= count, "\(map.name): read past the map")
        return (base + offset).load(as: UInt64.self)
    }

    /// Stores `value` at `offset` (8-aligned) with one 8-octet store: a program that reads the
    /// word with one load sees the old value or the new one, never a mix.
    public func store(_ value: UInt64, at offset: Int) {
        precondition(offset >= 0 && offset % 8 == 0 && offset + 8 <= count, "\(map.name): write past the map")
        (base + offset).storeBytes(of: value, as: UInt64.self)
    }

    /// Sets `length` bytes from `offset` to zero.
    public func zero(at offset: Int, length: Int) {
        precondition(offset >= 0 && length >= 0 && offset + length <= count, "\(map.name): write past the map")
        (base + offset).initializeMemory(as: UInt8.self, repeating: 0, count: length)
    }

    /// Copies `length` bytes from `offset` to `to`, within the mapping (no copy in between). No
    /// BPF program may be reading the range written.
    public func copy(from offset: Int, to: Int, length: Int) {
        precondition(
            offset >= 0 && to >= 0 && length >= 0 && offset + length <= count && to + length <= count,
            "\(map.name): copy past the map")
        (base + to).copyMemory(from: base + offset, byteCount: length)
    }
}
