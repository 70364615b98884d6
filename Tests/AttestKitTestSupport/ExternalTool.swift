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

    /// Runs `executable` with `arguments`; standard output and standard error are captured together.
    public static func run(_ executable: URL, _ arguments: [String]) throws -> Outcome {
        let process = try ChildProcess(
            executable: executable.path, arguments: arguments, standardInput: .null, standardOutput: .pipe,
            standardError: .sameAsOutput)
        let output = try process.collectOutput()
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
