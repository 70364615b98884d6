import ArgumentParser
import AttestKitTesting
import Foundation

/// A file a command reads, bounded: at most `limit` bytes are held and one byte more is refused, so that a huge
/// file, a FIFO or `/dev/zero` fails with a usage error instead of filling memory.
enum InputFile {
    /// The bytes of `path` (standard input for `-`), read by ``BoundedFile``.
    /// - Throws: `ValidationError` naming `path` when it cannot be opened or holds more than `limit` bytes.
    static func read(_ path: String, limit: Int = 1 << 20) throws -> Data {
        do {
            return path == "-"
                ? try BoundedFile.read(.standardInput, limit: limit) : try BoundedFile.read(path: path, limit: limit)
        } catch .overLimit {
            throw ValidationError("\(path == "-" ? "the input" : path) is over \(BoundedFile.size(limit))")
        } catch {
            throw ValidationError("cannot read \(path)")
        }
    }

    /// The text of `path`, UTF-8 (invalid bytes replaced), as ``read(_:limit:)`` reads it.
    static func text(_ path: String, limit: Int = 1 << 20) throws -> String {
        String(decoding: try read(path, limit: limit), as: UTF8.self)
    }

    /// The lines of standard input (or another stream), read 64 KiB at a time and bounded as a file is: a line over
    /// `limit` bytes is a usage error, so that an endless input without a line break (`/dev/zero`) is refused after
    /// `limit` bytes instead of filling memory. At most one line and one chunk are held.
    struct Lines {
        private let handle: FileHandle
        private let limit: Int
        /// Bytes read; the next line starts at `start`.
        private var buffer: [UInt8] = []
        private var start = 0
        /// `buffer[start..<scanned]` holds no line break.
        private var scanned = 0
        private var ended = false

        init(_ handle: FileHandle = .standardInput, limit: Int) {
            self.handle = handle
            self.limit = limit
        }

        /// The next line without its `\n` or `\r\n` (UTF-8, invalid bytes replaced), as `readLine` gives it; `nil`
        /// at the end of the input.
        /// - Throws: `ValidationError` when a line is over the limit or the input cannot be read.
        mutating func next() throws -> String? {
            while true {
                if let newline = lineBreak() {
                    guard newline - start <= limit else { throw Self.overLimit(limit) }
                    let end = newline > start && buffer[newline - 1] == 0x0D ? newline - 1 : newline
                    let line = String(decoding: buffer[start..<end], as: UTF8.self)
                    start = newline + 1
                    scanned = start
                    return line
                }
                scanned = buffer.count
                guard buffer.count - start <= limit else { throw Self.overLimit(limit) }
                if ended {
                    guard start < buffer.count else { return nil }
                    let line = String(decoding: buffer[start...], as: UTF8.self)
                    start = buffer.count
                    scanned = start
                    return line
                }
                buffer.removeFirst(start)
                scanned -= start
                start = 0
                let chunk: Data
                do {
                    chunk = try handle.read(upToCount: 1 << 16) ?? Data()
                } catch {
                    throw ValidationError("cannot read the input")
                }
                if chunk.isEmpty { ended = true } else { buffer.append(contentsOf: chunk) }
            }
        }

        /// The first `\n` at or past `scanned` (`memchr`: a byte-by-byte search is slow in a debug build).
        private func lineBreak() -> Int? {
            buffer.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress, scanned < bytes.count,
                    let found = memchr(base + scanned, 0x0A, bytes.count - scanned)
                else { return nil }
                return base.distance(to: UnsafeRawPointer(found))
            }
        }

        private static func overLimit(_ limit: Int) -> ValidationError {
            ValidationError("the input has a line over \(BoundedFile.size(limit))")
        }
    }
}
