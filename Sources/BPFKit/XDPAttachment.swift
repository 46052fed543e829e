import CLibBPF

#if canImport(Glibc)
import Glibc
#endif

/// Attaching XDP programs to network interfaces (netlink attachments: they stay when the process
/// exits, which is what lets the fast path outlive a crashed daemon).
public enum XDPAttachment {
    /// Native (driver) mode, or generic (skb) mode for interfaces whose driver has no XDP.
    public enum Mode: String, Sendable, CaseIterable {
        case native
        case generic

        var flags: UInt32 {
            switch self {
            case .native: return UInt32(XDP_FLAGS_DRV_MODE)
            case .generic: return UInt32(XDP_FLAGS_SKB_MODE)
            }
        }
    }

    /// The interface index of `name`.
    public static func interfaceIndex(_ name: String) throws(BPFError) -> Int32 {
        let index = if_nametoindex(name)
        if index == 0 { throw BPFError("find interface", name, errno: errno == 0 ? ENODEV : errno) }
        return Int32(index)
    }

    /// The ID of the XDP program attached to `ifindex` in `mode`, or nil.
    public static func attachedProgramID(ifindex: Int32, mode: Mode) throws(BPFError) -> UInt32? {
        var id: UInt32 = 0
        let rc = bpf_xdp_query_id(ifindex, Int32(mode.flags), &id)
        if rc != 0 { throw BPFError("query XDP program", "ifindex \(ifindex)", errno: rc) }
        return id == 0 ? nil : id
    }

    /// Attaches `program` to `ifindex`. When a program is already attached, it is replaced in one
    /// step: no packet sees the interface without a program. With CAP_SYS_ADMIN the replacement
    /// is conditional on the program seen (XDP_FLAGS_REPLACE); without it (a daemon run as its own
    /// user with CAP_BPF and CAP_NET_ADMIN) no program can be opened by its ID, and the attached
    /// one is replaced all the same, in the same one step, without that check.
    public static func attach(_ program: BPFProgram, ifindex: Int32, mode: Mode) throws(BPFError) {
        var opts = bpf_xdp_attach_opts()
        opts.sz = optionsSize(bpf_xdp_attach_opts.self, endingWith: \.old_prog_fd, 4)
        var flags = mode.flags
        var oldFD: Int32 = -1
        if let old = try attachedProgramID(ifindex: ifindex, mode: mode) {
            oldFD = bpf_prog_get_fd_by_id(old)
            if oldFD >= 0 {
                opts.old_prog_fd = oldFD
                flags |= UInt32(XDP_FLAGS_REPLACE)
            } else if errno != EPERM {
                throw BPFError("open attached program", "id \(old)", errno: errno)
            }
        }
        defer { if oldFD >= 0 { close(oldFD) } }
        let rc = bpf_xdp_attach(ifindex, program.fd, flags, &opts)
        if rc != 0 { throw BPFError("attach XDP (\(mode.rawValue))", "ifindex \(ifindex)", errno: rc) }
    }

    /// Detaches `program` from `ifindex` if it is still the one attached (another instance may
    /// have replaced it since).
    public static func detach(_ program: BPFProgram, ifindex: Int32, mode: Mode) throws(BPFError) {
        var opts = bpf_xdp_attach_opts()
        opts.sz = optionsSize(bpf_xdp_attach_opts.self, endingWith: \.old_prog_fd, 4)
        opts.old_prog_fd = program.fd
        let rc = bpf_xdp_detach(ifindex, mode.flags | UInt32(XDP_FLAGS_REPLACE), &opts)
        if rc != 0 && rc != -EEXIST { throw BPFError("detach XDP", "ifindex \(ifindex)", errno: rc) }
    }
}

extension BPFMap {
    /// Opens a map pinned at `path` (e.g. to read counters from another process). A nil
    /// `valueSize` takes the map's own.
    public static func pinned(_ path: String, name: String, keySize: Int, valueSize: Int?, perCPU: Bool)
        throws(BPFError) -> BPFMap
    {
        let fd = bpf_obj_get(path)
        if fd < 0 { throw BPFError("open pinned map", path, errno: errno) }
        var info = bpf_map_info()
        var len = UInt32(MemoryLayout<bpf_map_info>.size)
        if bpf_obj_get_info_by_fd(fd, &info, &len) != 0 { throw BPFError("map info", path, errno: errno) }
        guard Int(info.key_size) == keySize, valueSize == nil || Int(info.value_size) == valueSize else {
            close(fd)
            throw BPFError(
                "pinned map \(path) has key/value sizes \(info.key_size)/\(info.value_size), expected \(keySize)/\(valueSize ?? 0):",
                "ABI mismatch", errno: EINVAL)
        }
        return BPFMap(
            name: name, fd: fd, keySize: keySize, valueSize: Int(info.value_size), maxEntries: Int(info.max_entries),
            perCPU: perCPU)
    }
}

/// The `sz` to give a libbpf options struct: the end of its last field we use. libbpf checks that
/// bytes past the fields it knows, up to `sz`, are zero; the struct's trailing padding is not ours
/// to control from Swift (a release build left it non-zero), so `sz` stops before it.
func optionsSize<T>(_ type: T.Type, endingWith last: PartialKeyPath<T>, _ lastSize: Int) -> Int {
    MemoryLayout<T>.offset(of: last)! + lastSize
}

/// Checks for bpffs, where pins must live.
public enum BPFFileSystem {
    static let magic: Int = 0xCAFE_4A11

    /// Whether `path` is on a bpffs mount.
    public static func isBPFFS(_ path: String) -> Bool {
        var s = statfs()
        guard statfs(path, &s) == 0 else { return false }
        return Int(s.f_type) == magic
    }
}
