#if canImport(Glibc)
import Glibc
#endif

/// A file's identity and version as stat(2) tells them: device, inode, size and modification
/// time (to the nanosecond). What tells a file changed without reading it: a zone file an
/// operator edited, a file whose digest is known already.
public struct FileStamp: Equatable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modified: Int64
    public var modifiedNanos: Int

    public init?(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = Int64(st.st_mtim.tv_sec)
        modifiedNanos = Int(st.st_mtim.tv_nsec)
    }
}
