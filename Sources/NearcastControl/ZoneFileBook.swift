import NearcastBasics
import NearcastZones

/// What the served state knows of the zone files it serves from and writes back: each file's
/// stamp as it was last read or written here (no file is written over that changed on disk since
/// it was read: `ZoneWriteBack`), and which journals have been made whole. A value `ServedConfig`
/// owns (its turns guard it).
struct ZoneFileBook {
    /// Each zone file's stamp as it was when last read or written here.
    private var stamps: [String: FileStamp] = [:]
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

extension FileStamp {
    /// This version of a zone file at `serial`, as its journal marks it.
    func mark(serial: UInt32) -> ZoneJournal.FileMark {
        ZoneJournal.FileMark(serial: serial, size: size, modifiedNanos: modified * 1_000_000_000 + Int64(modifiedNanos))
    }
}
