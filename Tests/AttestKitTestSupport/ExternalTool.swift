import AttestKitTesting
public import Foundation

/// Runs an external program (openssl, the attestkit binary) and captures its output.
public enum ExternalTool {
    /// The exit status and the output.
    public struct Outcome: Sendable {
        /// The exit status.
        public var status: Int32
        /// Standard output and standard error, together.
        public var output: String
    }

    /// Runs `executable` with `arguments`; standard output and standard error are captured together. The wait runs on
    /// a thread of its own: a test blocking a thread of Swift's concurrency pool (two on a 2-core machine) for as long
    /// as a child runs would stall every other test running beside it.
    public static func run(_ executable: URL, _ arguments: [String]) async throws -> Outcome {
        let process = try ChildProcess(
            executable: executable.path, arguments: arguments, standardInput: .null, standardOutput: .pipe,
            standardError: .sameAsOutput)
        let output = try await process.collectOutput()
        return Outcome(
            status: output.termination.status, output: String(decoding: output.standardOutput, as: UTF8.self))
    }

    /// A new empty directory under the temporary directory.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-testing-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
