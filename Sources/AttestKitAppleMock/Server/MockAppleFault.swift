/// A failure the mock builds into its next answers, to test a client's handling of Apple's bad days.
///
/// A fault applies to the next ``count`` requests to its ``endpoint`` (every endpoint when `nil`), in the order
/// faults were added; a request takes at most one fault. On the command line: `ENDPOINT:ACTION[:COUNT]`, with
/// ENDPOINT `query`, `update`, `validate`, `receipt` or `all`, and ACTION an HTTP status (`429`, `503`, ...), `drop`
/// or `delay=DURATION` (`delay=2s`, `delay=500ms`), e.g. `--fault query:429:2 --fault receipt:drop`.
public struct MockAppleFault: Sendable, Hashable, CustomStringConvertible {
    /// What happens to a request.
    public enum Action: Sendable, Hashable {
        /// Answer this status with this text, or with Apple's text for the status when `nil`.
        case status(Int, text: String? = nil)
        /// Wait this long, then answer normally.
        case delay(Duration)
        /// Close the connection without an answer.
        case drop
    }

    /// What happens.
    public var action: Action
    /// The endpoint it applies to; `nil` for every endpoint.
    public var endpoint: MockAppleEndpoint?
    /// How many requests it applies to.
    public var count: Int

    /// Creates a fault.
    ///
    /// - Parameters:
    ///   - action: What happens to a request.
    ///   - endpoint: The endpoint; `nil` for every endpoint.
    ///   - count: How many requests, at least 1.
    public init(_ action: Action, endpoint: MockAppleEndpoint? = nil, count: Int = 1) {
        self.action = action
        self.endpoint = endpoint
        self.count = max(1, count)
    }

    /// Parses `ENDPOINT:ACTION[:COUNT]` (see the type's documentation).
    ///
    /// - Throws: ``MockAppleError/Code/invalidConfiguration`` for anything else.
    public init(parsing text: String) throws(MockAppleError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (2...3).contains(parts.count) else { throw Self.invalid(text) }
        let endpoint: MockAppleEndpoint?
        if parts[0] == "all" {
            endpoint = nil
        } else if let named = MockAppleEndpoint(rawValue: parts[0]) {
            endpoint = named
        } else {
            throw Self.invalid(text)
        }
        let action: Action
        if parts[1] == "drop" {
            action = .drop
        } else if parts[1].hasPrefix("delay="), let duration = Self.duration(parts[1].dropFirst(6)) {
            action = .delay(duration)
        } else if let status = Int(parts[1]), (200...599).contains(status) {
            action = .status(status)
        } else {
            throw Self.invalid(text)
        }
        var count = 1
        if parts.count == 3 {
            guard let parsed = Int(parts[2]), parsed >= 1 else { throw Self.invalid(text) }
            count = parsed
        }
        self.init(action, endpoint: endpoint, count: count)
    }

    /// `ENDPOINT:ACTION:COUNT`.
    public var description: String {
        let action: String
        switch self.action {
        case .status(let status, _): action = String(status)
        case .delay(let duration): action = "delay=\(RetryMilliseconds.of(duration))ms"
        case .drop: action = "drop"
        }
        return "\(endpoint?.rawValue ?? "all"):\(action):\(count)"
    }

    /// Whether it applies to a request to `endpoint`.
    func applies(to endpoint: MockAppleEndpoint) -> Bool { self.endpoint == nil || self.endpoint == endpoint }

    /// `2s`, `500ms`, or a bare number of seconds; at most one hour.
    private static func duration(_ text: Substring) -> Duration? {
        let milliseconds: Double
        if text.hasSuffix("ms"), let value = Double(text.dropLast(2)) {
            milliseconds = value
        } else if text.hasSuffix("s"), let value = Double(text.dropLast()) {
            milliseconds = value * 1_000
        } else if let value = Double(text) {
            milliseconds = value * 1_000
        } else {
            return nil
        }
        guard milliseconds >= 0, milliseconds <= 3_600_000 else { return nil }
        return .milliseconds(Int(milliseconds))
    }

    private static func invalid(_ text: String) -> MockAppleError {
        MockAppleError(
            .invalidConfiguration,
            "a fault is ENDPOINT:ACTION[:COUNT] with ENDPOINT query|update|validate|receipt|all and ACTION a status, "
                + "drop or delay=DURATION; got \(text)")
    }
}

/// Whole milliseconds of a duration, for descriptions.
enum RetryMilliseconds {
    static func of(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
