import Foundation

extension FileHandle {
    func write(_ s: String) { write(s.data(using: .utf8)!) }
}
