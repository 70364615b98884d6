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
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// A new empty directory under the temporary directory.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-testing-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
