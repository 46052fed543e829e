/// A libbpf or bpf(2) call that failed: which operation, on what, and the errno it gave.
public struct BPFError: Error, CustomStringConvertible, Sendable, Equatable {
    public var operation: String
    public var subject: String
    public var errno: Int32

    public init(_ operation: String, _ subject: String, errno: Int32) {
        self.operation = operation
        self.subject = subject
        self.errno = errno < 0 ? -errno : errno
    }

    public var description: String {
        "\(operation) \(subject): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

#if canImport(Glibc)
import Glibc
#endif
