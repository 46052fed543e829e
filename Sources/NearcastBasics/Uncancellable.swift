/// Runs `work` to its end even when the task that awaits it is cancelled, and gives its outcome:
/// for a write that, cut short, would leave shared state half made (a zone's import into a
/// fleet's store, left `importing`). A task of its own, awaited: the one role of an unstructured
/// task whose body throws (docs/ARCHITECTURE.md §8).
public func uncancellable<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Task { try await work() }.value
}
