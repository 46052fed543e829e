import CLibBPF

/// Runs `body` with the calling thread kept to CPU `cpu`, then lets it run anywhere it could
/// before: per-CPU maps (per-CPU arrays and hashes) then see every test run of
/// `body` on one CPU.
public func withThread<T>(onCPU cpu: Int, _ body: () throws -> T) rethrows -> T {
    var before = [UInt](repeating: 0, count: 16)
    let saved = before.withUnsafeMutableBufferPointer { bpfkit_get_affinity($0.baseAddress) } == 0
    var one = [UInt](repeating: 0, count: 16)
    one[cpu / UInt.bitWidth] = 1 << UInt(cpu % UInt.bitWidth)
    _ = one.withUnsafeBufferPointer { bpfkit_set_affinity($0.baseAddress) }
    defer { if saved { _ = before.withUnsafeBufferPointer { bpfkit_set_affinity($0.baseAddress) } } }
    return try body()
}
