import CLibBPF

#if canImport(Glibc)
import Glibc
#endif

/// A map this process created itself (not declared by an object), such as the inner maps of a
/// map-in-map: its file descriptor is closed when the last reference goes, after which the kernel
/// frees the map once no outer map holds it either.
public final class BPFOwnedMap: Sendable {
    public let map: BPFMap

    /// Creates a map like `template` (type, key and value sizes, flags) with room for `maxEntries`.
    public init(like template: BPFMapTemplate, name: String, maxEntries: Int) throws(BPFError) {
        var opts = bpf_map_create_opts()
        opts.sz = MemoryLayout<bpf_map_create_opts>.size
        opts.map_flags = template.flags
        let entries = UInt32(clamping: max(1, maxEntries))
        let fd = bpf_map_create(
            template.type, name, UInt32(template.keySize), UInt32(template.valueSize), entries, &opts)
        if fd < 0 { throw BPFError("create map (\(entries) entries)", name, errno: errno) }
        map = BPFMap(
            name: name, fd: fd, keySize: template.keySize, valueSize: template.valueSize, maxEntries: Int(entries),
            perCPU: BPFObject.isPerCPU(template.type))
    }

    deinit { close(map.fd) }
}

/// What the inner maps of a map-in-map must be like: the object's template for them.
public struct BPFMapTemplate: Sendable {
    let type: bpf_map_type
    public let keySize: Int
    public let valueSize: Int
    public let flags: UInt32
    /// The inner maps' size when the kernel takes only that one (no BPF_F_INNER_MAP), else the
    /// template's own.
    public let maxEntries: Int
}
