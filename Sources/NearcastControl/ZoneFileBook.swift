import NearcastBasics

/// What the served state knows of the zone files it serves from and writes back: each file's
/// stamp as it was last read or written here, which write-backs are due, under way or asked for
/// again, what each file's last write-back took, and which journals have been made whole. A
/// value `ServedConfig` owns (its turns guard it); the write-back itself is
/// ServedConfig+WriteBack.swift, which this keeps to its rules: one write-back of a file at a
/// time, changes made meanwhile written by the next, and no file written over that changed on
/// disk since it was read.
struct ZoneFileBook {
    /// Each zone file's stamp as it was when last read or written here.
    private var stamps: [String: FileStamp] = [:]
    /// Files whose write-back is scheduled.
    private var due: Set<String> = []
    /// Files being written back now, and those with changes made meanwhile.
    private var writing: Set<String> = []
    private var again: Set<String> = []
    /// What the last write-back of each file took (its text made and written: CPU time).
    private var took: [String: Duration] = [:]
    /// Journals whose tail a crash may have cut short and that have been cut to their last whole
    /// block (`ZoneJournal.dropCutShortTail`): each once, before this daemon first appends.
    private var wholeJournals: Set<String> = []

    /// The book of the zone files at `paths`, stamped as they are now.
    init(stamping paths: [String]) { restamp(paths) }

    // MARK: stamps

    /// Notes the stamps of the files at `paths` as they are now, and forgets every other file's:
    /// after a load of them.
    mutating func restamp(_ paths: [String]) {
        stamps = Dictionary(paths.compactMap { p in FileStamp(p).map { (p, $0) } }, uniquingKeysWith: { a, _ in a })
    }

    /// Notes `stamp` (nil: forgets it) as the file at `path` now, read or written here.
    mutating func note(_ path: String, _ stamp: FileStamp?) { stamps[path] = stamp }

    /// The stamp of the file at `path` as last read or written here.
    func stamp(of path: String) -> FileStamp? { stamps[path] }

    /// Whether the file at `path` is as it was last read or written here (or was never stamped):
    /// one changed on disk meanwhile is not written over.
    func unchangedOnDisk(_ path: String) -> Bool {
        guard let known = stamps[path] else { return true }
        return FileStamp(path) == known
    }

    // MARK: write-backs

    /// Marks `path`'s write-back due and says after how long it runs: at least `sync`, and at
    /// least nine times what its last took (at most a minute); nil when one is due already.
    mutating func schedule(_ path: String, sync: Duration) -> Duration? {
        guard due.insert(path).inserted else { return nil }
        return max(sync, min((took[path] ?? .zero) * 9, .seconds(60)))
    }

    /// Begins `path`'s write-back (no longer due): false when one is under way, which then writes
    /// again once done.
    mutating func begin(_ path: String) -> Bool {
        due.remove(path)
        guard writing.insert(path).inserted else {
            again.insert(path)
            return false
        }
        return true
    }

    /// Ends `path`'s write-back: whether changes made meanwhile ask for another.
    mutating func end(_ path: String) -> Bool {
        writing.remove(path)
        return again.remove(path) != nil
    }

    /// Notes what making and writing `path`'s text took.
    mutating func noteTook(_ duration: Duration, for path: String) { took[path] = duration }

    // MARK: journals

    /// Whether `journal` has been made whole since this daemon started (or since its zone was
    /// first served here).
    func isWhole(_ journal: String) -> Bool { wholeJournals.contains(journal) }

    /// Notes `journal` made whole, or (`false`) to be looked at again before the next append.
    mutating func noteWhole(_ journal: String, _ whole: Bool = true) {
        if whole { wholeJournals.insert(journal) } else { wholeJournals.remove(journal) }
    }

    /// The files now at `moved(path)` that were at `path` (a directory renamed).
    mutating func move(_ moved: (String) -> String) {
        stamps = Dictionary(stamps.map { (moved($0.key), $0.value) }, uniquingKeysWith: { a, _ in a })
        wholeJournals = Set(wholeJournals.map(moved))
    }
}
