import DNSWire

@testable import NearcastZones

extension Zone {
    /// The zone of master-file `text` at `origin`, read and built as a zone file is (`z.zone` in
    /// messages): what this module's tests start from.
    static func parsed(_ text: String, origin: DNSName) throws -> Zone {
        let records = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: origin)
        return try Zone.build(origin: origin, records: records, sourceName: "z.zone")
    }
}
