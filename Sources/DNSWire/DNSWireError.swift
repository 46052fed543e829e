/// Why a byte string is not a well-formed DNS message, or a value cannot be encoded.
///
/// Every case names the offset at which reading stopped, so a malformed packet can be diagnosed.
public enum DNSWireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The message ended before a field that must be there (needed `count` bytes at `offset`).
    case truncated(offset: Int, needed: Int)
    /// A label length byte with the reserved top bits 01 or 10.
    case badLabelType(offset: Int)
    /// A compression pointer that does not point strictly backwards, or loops.
    case badPointer(offset: Int)
    /// A name longer than 255 octets in wire form.
    case nameTooLong(offset: Int)
    /// A label longer than 63 octets (only from text or construction).
    case labelTooLong
    /// An empty label inside a name (only from text).
    case emptyLabel
    /// RDATA whose length does not match its type's layout.
    case badRData(type: UInt16, offset: Int, reason: String)
    /// An OPT record where it may not be: not at the root, more than one, or outside the additional section.
    case badOPT(offset: Int, reason: String)
    /// A TSIG record anywhere but last in the message (RFC 8945 §5.1).
    case misplacedTSIG(offset: Int)
    /// Bytes left over after the last record the header announced.
    case trailingBytes(offset: Int, count: Int)
    /// A message or field that cannot be encoded (too large, out of range).
    case unencodable(String)
    /// A name or value given as text that is not valid.
    case badText(String)

    public var description: String {
        switch self {
        case .truncated(let offset, let needed): return "message truncated: needed \(needed) bytes at offset \(offset)"
        case .badLabelType(let offset): return "reserved label type at offset \(offset)"
        case .badPointer(let offset): return "bad compression pointer at offset \(offset)"
        case .nameTooLong(let offset): return "name longer than 255 octets at offset \(offset)"
        case .labelTooLong: return "label longer than 63 octets"
        case .emptyLabel: return "empty label"
        case .badRData(let type, let offset, let reason):
            return "bad RDATA for type \(type) at offset \(offset): \(reason)"
        case .badOPT(let offset, let reason): return "bad OPT record at offset \(offset): \(reason)"
        case .misplacedTSIG(let offset): return "TSIG record at offset \(offset) is not the last record"
        case .trailingBytes(let offset, let count): return "\(count) trailing bytes at offset \(offset)"
        case .unencodable(let what): return "cannot encode: \(what)"
        case .badText(let what): return what
        }
    }
}
