import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Files written so that a crash leaves either the old contents or the new, never a mix: a
/// temporary file beside the target, fsync, rename over it, fsync of the directory; and an
/// append-only log whose every line is on disk before the call returns.
public enum DurableFile {
    /// What failed, with the path and the system's word for it.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        public init(_ what: String, _ path: String) {
            description = "\(what) \(path): \(String(cString: strerror(errno)))"
        }
    }

    /// Replaces `path`'s contents with `data` atomically and durably. The file keeps its mode (a
    /// new one is readable by its owner only).
    public static func replace(_ path: String, with data: [UInt8]) throws(Failure) {
        try commit(try prepare(path, with: data), onto: path)
    }

    /// The first half of `replace`: `data` written and synced to a temporary file beside `path`,
    /// with `path`'s mode; `commit` puts it in place (the slow half apart from the quick one).
    public static func prepare(_ path: String, with data: [UInt8]) throws(Failure) -> String {
        try prepare(path) { (write: ([UInt8]) throws(Failure) -> Void) throws(Failure) in try write(data) }
    }

    /// `prepare`, with the contents written in pieces: `fill` is given a function that appends
    /// one piece to the temporary file (so a large file need not be held in memory whole).
    public static func prepare(
        _ path: String, writing fill: (_ write: ([UInt8]) throws(Failure) -> Void) throws(Failure) -> Void
    ) throws(Failure) -> String {
        let tmp = path + ".tmp-\(getpid())"
        var st = stat()
        let mode: mode_t = stat(path, &st) == 0 ? st.st_mode & 0o7777 : 0o600
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure("cannot create", tmp) }
        defer { close(fd) }
        fchmod(fd, mode)  // whatever the umask
        do throws(Failure) {
            try fill { (piece: [UInt8]) throws(Failure) in try writeAll(fd, piece, tmp) }
            guard fsync(fd) == 0 else { throw Failure("cannot fsync", tmp) }
        } catch {
            unlink(tmp)
            throw error
        }
        return tmp
    }

    /// The second half of `replace`: the file `prepare` wrote renamed onto `path`, and the
    /// directory synced.
    public static func commit(_ tmp: String, onto path: String) throws(Failure) {
        guard rename(tmp, path) == 0 else {
            let failure = Failure("cannot rename onto", path)
            unlink(tmp)
            throw failure
        }
        try syncDirectory(of: path)
    }

    /// Appends `line` (a newline is added) to the log at `path` and waits for it to reach the disk.
    public static func append(_ path: String, line: String) throws(Failure) {
        try append(path, bytes: Array((line + "\n").utf8))
    }

    /// Appends `bytes` to the file at `path` (made if need be, readable by its owner only) and waits
    /// for them to reach the disk; a new file's directory entry too.
    public static func append(_ path: String, bytes: [UInt8]) throws(Failure) {
        let existed = access(path, F_OK) == 0
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("cannot open", path) }
        defer { close(fd) }
        try writeAll(fd, bytes, path)
        guard fdatasync(fd) == 0 else { throw Failure("cannot fsync", path) }
        if !existed { try syncDirectory(of: path) }
    }

    static func writeAll(_ fd: Int32, _ data: [UInt8], _ path: String) throws(Failure) {
        var done = 0
        while done < data.count {
            let n = data[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure("cannot write", path) }
            done += n
        }
    }

    static func syncDirectory(of path: String) throws(Failure) {
        let dir = (path as NSString).deletingLastPathComponent
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open directory", dir) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure("cannot fsync directory", dir) }
    }
}
