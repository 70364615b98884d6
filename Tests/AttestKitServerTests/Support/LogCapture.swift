import Logging
import Synchronization

/// Collects what a logger logs, for tests that check a log line: `Logger(label:factory:)` with ``handler(_:)``.
final class LogCapture: Sendable {
    /// One logged line.
    struct Line: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    private let lines = Mutex<[Line]>([])

    /// Everything logged so far.
    var logged: [Line] { lines.withLock { $0 } }

    /// A logger that records into this capture from `level` up.
    func logger(level: Logger.Level = .debug) -> Logger {
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
