public import Logging
import Synchronization

/// Collects what a logger logs, for tests that check a log line: `Logger(label:factory:)` with ``handler(_:)``.
public final class LogCapture: Sendable {
    /// One logged line.
    public struct Line: Sendable {
        /// The line's level.
        public let level: Logger.Level
        /// The message.
        public let message: String
        /// The handler's and the line's metadata, as strings.
        public let metadata: [String: String]
    }

    private let lines = Mutex<[Line]>([])

    /// An empty capture.
    public init() {}

    /// Everything logged so far.
    public var logged: [Line] { lines.withLock { $0 } }

    /// A logger that records into this capture from `level` up.
    public func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "attestkit.test") { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func record(_ line: Line) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata.mapValues { "\($0)" }
            for (key, value) in event.metadata ?? [:] { all[key] = "\(value)" }
            capture.record(Line(level: event.level, message: "\(event.message)", metadata: all))
        }
    }
}
