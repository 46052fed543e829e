import CLibBPF

#if canImport(Glibc)
import Glibc
#endif

/// A BPF object file opened and loaded into the kernel: its programs passed the verifier and its
/// maps exist. Closing it (deinit) releases what no pin or attachment holds.
///
/// `@unchecked Sendable`: libbpf objects are not thread-safe to mutate, and this class exposes no
/// mutation after `init`; map and program file descriptors may be used from any thread.
public final class BPFObject: @unchecked Sendable {
    private let object: OpaquePointer
    /// The verifier's log of the last program loaded, at log level 1 (statistics only).
    public let verifierLog: String
    /// The inner-map templates of the map-in-maps, by outer map name (libbpf drops them once the
    /// outer maps exist, so they are read before loading).
    let innerTemplates: [String: BPFMapTemplate]

    /// Whether libbpf finds the kernel's config for `__kconfig` externs (`/boot/config-RELEASE` or
    /// `/proc/config.gz`). Without one, libbpf fails the load even for weak externs, so the object
    /// is opened with `CONFIG_HZ=0` given instead, the one the program reads (bpf/include/compiler.h):
    /// it then takes its slower clocks.
    static let kernelConfigFound: Bool = {
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return access("/boot/config-\(release)", R_OK) == 0 || access("/proc/config.gz", R_OK) == 0
    }()

    /// Opens `path` and loads it. The verifier's statistics are kept in `verifierLog`.
    ///
    /// With `pinMapsUnder`, every map the object declares is pinned as `<dir>/<map name>` (not the
    /// compiler's internal ones, such as .rodata): a map already pinned there
    /// is reused (when its type and sizes match; otherwise loading fails and says so), so a new
    /// instance takes over the state of the one before it. `maxEntries` sizes maps by name before
    /// they are created (a reused map must have the same size). `innerMapEntries` sizes the inner
    /// maps of map-in-maps by the outer map's name: the kernel then takes only inner maps of that
    /// size, and the verifier inlines lookups in inner ARRAYs (a reused outer map keeps the size it
    /// was made with).
    ///
    /// The maps and the programs may be loaded apart, so that the verifier's work runs while the
    /// maps are filled: `programs: false` makes the maps alone (no program is loaded); an object
    /// opened with `reusingMapsOf` that one then loads the programs against its maps (nothing of
    /// its own is made but the compiler's internal maps; the other object keeps the pins).
    public init(
        path: String, pinMapsUnder pinDirectory: String? = nil, maxEntries: [String: UInt32] = [:],
        innerMapEntries: [String: UInt32] = [:], programs: Bool = true, reusingMapsOf maps: BPFObject? = nil
    ) throws(BPFError) {
        let obj = Self.kernelConfigFound ? bpfkit_open_file(path, nil) : bpfkit_open_file(path, "CONFIG_HZ=0\n")
        guard let obj else { throw BPFError("open", path, errno: errno) }
        if !programs {
            var prog: OpaquePointer? = bpf_object__next_program(obj, nil)
            while let p = prog {
                bpf_program__set_autoload(p, false)
                prog = bpf_object__next_program(obj, p)
            }
        }
        if let maps {
            var m: OpaquePointer? = bpf_object__next_map(obj, nil)
            while let map = m {
                m = bpf_object__next_map(obj, map)
                if bpf_map__is_internal(map) { continue }
                let name = String(cString: bpf_map__name(map))
                let theirs = bpf_object__find_map_by_name(maps.object, name)
                let rc = theirs.map { bpf_map__reuse_fd(map, bpf_map__fd($0)) } ?? -ENOENT
                if rc != 0 {
                    bpf_object__close(obj)
                    throw BPFError("reuse the map", "\(name) of the object loaded before", errno: rc)
                }
            }
        }
        for (name, entries) in maxEntries where maps == nil {
            guard let map = bpf_object__find_map_by_name(obj, name) else {
                bpf_object__close(obj)
                throw BPFError("find map", "\(name) in \(path)", errno: ENOENT)
            }
            let rc = bpf_map__set_max_entries(map, entries)
            if rc != 0 {
                bpf_object__close(obj)
                throw BPFError("set max entries \(entries)", name, errno: rc)
            }
        }
        if let dir = pinDirectory, maps == nil {
            var m: OpaquePointer? = bpf_object__next_map(obj, nil)
            while let map = m {
                // Internal maps (.rodata and the like) belong to this load of the object: a frozen
                // .rodata cannot be reused by the next one, and there is no state in it to keep.
                if bpf_map__is_internal(map) {
                    m = bpf_object__next_map(obj, map)
                    continue
                }
                let name = String(cString: bpf_map__name(map))
                let rc = bpf_map__set_pin_path(map, dir + "/" + name)
                if rc != 0 {
                    bpf_object__close(obj)
                    throw BPFError("set pin path", dir + "/" + name, errno: rc)
                }
                m = bpf_object__next_map(obj, map)
            }
        }
        var templates: [String: BPFMapTemplate] = [:]
        // Inner-map templates of the sizes asked for, made here and handed to libbpf (its own are
        // dropped): the outer maps copy what they need of them when they are made, at the load.
        var sizedTemplates: [BPFOwnedMap] = []
        var m: OpaquePointer? = bpf_object__next_map(obj, nil)
        while let map = m, maps == nil {
            if let inner = bpf_map__inner_map(map) {
                let name = String(cString: bpf_map__name(map))
                let template = BPFMapTemplate(
                    type: bpf_map__type(inner), keySize: Int(bpf_map__key_size(inner)),
                    valueSize: Int(bpf_map__value_size(inner)),
                    flags: bpf_map__map_flags(inner),
                    maxEntries: Int(innerMapEntries[name] ?? bpf_map__max_entries(inner)))
                templates[name] = template
                if innerMapEntries[name] != nil {
                    let sized: BPFOwnedMap
                    do { sized = try BPFOwnedMap(like: template, name: name, maxEntries: template.maxEntries) } catch {
                        bpf_object__close(obj)
                        throw error
                    }
                    let rc = bpf_map__set_inner_map_fd(map, sized.map.fd)
                    if rc != 0 {
                        bpf_object__close(obj)
                        throw BPFError("set the inner map template of", name, errno: rc)
                    }
                    sizedTemplates.append(sized)
                }
            }
            m = bpf_object__next_map(obj, map)
        }
        innerTemplates = templates
        var logBuffer = [CChar](repeating: 0, count: 1 << 16)
        let log: String = logBuffer.withUnsafeMutableBufferPointer { buf in
            var prog: OpaquePointer? = bpf_object__next_program(obj, nil)
            while let p = prog {
                bpf_program__set_log_buf(p, buf.baseAddress, buf.count)
                bpf_program__set_log_level(p, 4)  // 4 = statistics only
                prog = bpf_object__next_program(obj, p)
            }
            let err = bpf_object__load(obj)
            if err != 0 { return "\u{0}\(err)" }
            return programs ? String(cString: buf.baseAddress!) : ""
        }
        withExtendedLifetime(sizedTemplates) {}
        if log.hasPrefix("\u{0}") {
            let err = Int32(log.dropFirst()) ?? -1
            bpf_object__close(obj)
            let what =
                pinDirectory.map { "load (verifier, or maps pinned under \($0) that do not match)" }
                ?? "load (verifier)"
            throw BPFError(what, path, errno: err)
        }
        self.object = obj
        self.verifierLog = log
    }

    deinit { bpf_object__close(object) }

    /// Records that the directory the maps were pinned under has been renamed to `directory` (the
    /// pins are the same files), so that `unpinMaps(under: directory)` finds them.
    public func pinsMoved(to directory: String) throws(BPFError) {
        for (map, name) in pinnableMaps {
            let rc = bpf_map__set_pin_path(map, directory + "/" + name)
            if rc != 0 { throw BPFError("set pin path", directory + "/" + name, errno: rc) }
        }
    }

    /// Removes the pins of every map under `directory` (the maps live on while anything uses them).
    public func unpinMaps(under directory: String) throws(BPFError) {
        for (map, name) in pinnableMaps {
            let rc = bpf_map__unpin(map, directory + "/" + name)
            if rc != 0 { throw BPFError("unpin map", directory + "/" + name, errno: rc) }
        }
    }

    /// The maps that are pinned with a pin directory, with their names: all but the compiler's
    /// internal ones (see init).
    private var pinnableMaps: [(OpaquePointer, String)] {
        var maps: [(OpaquePointer, String)] = []
        var m: OpaquePointer? = bpf_object__next_map(object, nil)
        while let map = m {
            if !bpf_map__is_internal(map) { maps.append((map, String(cString: bpf_map__name(map)))) }
            m = bpf_object__next_map(object, map)
        }
        return maps
    }

    /// The instructions the verifier processed (from its `processed N insns` line), if reported.
    public var verifiedInstructions: Int? {
        guard let r = verifierLog.firstRange(of: "processed ") else { return nil }
        return Int(verifierLog[r.upperBound...].prefix { $0.isNumber })
    }

    /// The map named `name`, checked to have the given key and value sizes.
    public func map(_ name: String, keySize: Int, valueSize: Int) throws(BPFError) -> BPFMap {
        guard let m = bpf_object__find_map_by_name(object, name) else {
            throw BPFError("find map", name, errno: ENOENT)
        }
        let k = Int(bpf_map__key_size(m))
        let v = Int(bpf_map__value_size(m))
        guard k == keySize, v == valueSize else {
            throw BPFError(
                "map \(name) has key/value sizes \(k)/\(v), expected \(keySize)/\(valueSize):", "ABI mismatch",
                errno: EINVAL)
        }
        return BPFMap(
            name: name, fd: bpf_map__fd(m), keySize: k, valueSize: v, maxEntries: Int(bpf_map__max_entries(m)),
            perCPU: Self.isPerCPU(bpf_map__type(m)))
    }

    /// The template of the inner maps of map-in-map `name` (declared with `__array(values, …)`),
    /// checked to have the given key and value sizes.
    public func innerMapTemplate(_ name: String, keySize: Int, valueSize: Int) throws(BPFError) -> BPFMapTemplate {
        guard let t = innerTemplates[name] else {
            throw BPFError("find inner map template", "\(name) is not a map-in-map", errno: EINVAL)
        }
        guard t.keySize == keySize, t.valueSize == valueSize else {
            throw BPFError(
                "inner maps of \(name) have key/value sizes \(t.keySize)/\(t.valueSize), expected \(keySize)/\(valueSize):",
                "ABI mismatch",
                errno: EINVAL)
        }
        return t
    }

    /// The program named `name` (its C function name).
    public func program(_ name: String) throws(BPFError) -> BPFProgram {
        guard let p = bpf_object__find_program_by_name(object, name) else {
            throw BPFError("find program", name, errno: ENOENT)
        }
        return BPFProgram(name: name, fd: bpf_program__fd(p))
    }

    static func isPerCPU(_ t: bpf_map_type) -> Bool {
        t == BPF_MAP_TYPE_PERCPU_ARRAY || t == BPF_MAP_TYPE_PERCPU_HASH || t == BPF_MAP_TYPE_LRU_PERCPU_HASH
    }
}
