public import Foundation
public import Logging
import Synchronization
import AttestKitFlows
import AttestKitWire

/// A swift-log handler that writes one JSON object per line: `time`, `level`, `label`, `message` and the
/// metadata as strings.
///
/// The service never puts keys, tokens, JWTs, receipts or attestation objects into log messages or metadata;
/// this handler adds nothing of its own beyond the time.
public struct JSONLogHandler: LogHandler {
    /// Where lines go.
    public typealias Sink = @Sendable (String) -> Void

    /// The handler's level.
    public var logLevel: Logger.Level
    /// The handler's metadata.
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let sink: Sink
    private let now: @Sendable () -> Date

    /// Creates a handler writing to `sink` (standard error by default).
    public init(
        label: String, level: Logger.Level = .info, now: @escaping @Sendable () -> Date = { Date() },
        sink: @escaping Sink = JSONLogHandler.standardError
    ) {
        self.label = label
        self.logLevel = level
        self.now = now
        self.sink = sink
    }

    /// Writes a line to standard error, whole.
    public static let standardError: Sink = { line in
        let data = Data((line + "\n").utf8)
        StandardErrorLock.lock.withLock { _ in FileHandle.standardError.write(data) }
    }

    /// Metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Formats and writes one line.
    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var members: [(String, String)] = [
            ("time", JSONText.string(APITime.format(now()))),
            ("level", JSONText.string(event.level.rawValue)),
            ("label", JSONText.string(label)),
            ("message", JSONText.string(event.message.description)),
        ]
        for key in merged.keys.sorted() where !["time", "level", "label", "message"].contains(key) {
            if let value = merged[key] { members.append((key, JSONText.string(value.description))) }
        }
        sink(JSONText.object(members))
    }
}

/// Keeps concurrent lines from interleaving.
enum StandardErrorLock {
    static let lock = Mutex(())
}
