import Foundation

/// The `--json` output of every bench mode: pretty-printed, keys sorted, on standard output.
enum BenchJSON {
    /// Prints `value` as JSON.
    static func print(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        Swift.print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
