import ArgumentParser
import Foundation

/// A file a command reads, bounded: at most `limit` bytes are held and one byte more is refused, so that a huge
/// file, a FIFO or `/dev/zero` fails with a usage error instead of filling memory.
enum InputFile {
    /// The bytes of `path` (standard input for `-`).
    /// - Throws: `ValidationError` naming `path` when it cannot be opened or holds more than `limit` bytes.
    static func read(_ path: String, limit: Int = 1 << 20) throws -> Data {
        let handle: FileHandle
        if path == "-" {
            handle = .standardInput
        } else {
            do {
                handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            } catch {
                throw ValidationError("cannot read \(path)")
            }
        }
        defer { if path != "-" { try? handle.close() } }
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw ValidationError("cannot read \(path)")
        }
        guard data.count <= limit else {
            let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
            throw ValidationError("\(path == "-" ? "the input" : path) is over \(size)")
        }
        return data
    }

    /// The text of `path`, UTF-8 (invalid bytes replaced), as ``read(_:limit:)`` reads it.
    static func text(_ path: String, limit: Int = 1 << 20) throws -> String {
        String(decoding: try read(path, limit: limit), as: UTF8.self)
    }
}
