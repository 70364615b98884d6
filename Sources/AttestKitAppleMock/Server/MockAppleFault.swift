/// A failure the mock builds into its next answers, to test a client's handling of Apple's bad days.
///
/// A fault applies to the next ``count`` requests to its ``endpoint`` (every endpoint when `nil`), in the order
/// faults were added; a request takes at most one fault. On the command line: `ENDPOINT:ACTION[:COUNT]`, with
/// ENDPOINT `query`, `update`, `validate`, `receipt` or `all`, and ACTION an HTTP status (`429`, `503`, ...), `drop`,
/// `delay=DURATION` (`delay=2s`, `delay=500ms`) or `stall=DURATION` (the answer's headers at once, its body that much
/// later; a body-less answer that much later), e.g. `--fault query:429:2 --fault receipt:drop`. A status may
/// carry a `Retry-After` header, sent verbatim: `ENDPOINT:STATUS[:COUNT]:retry-after=VALUE`, e.g.
/// `query:429:1:retry-after=2` or `all:503:retry-after=Sun, 12 Apr 2026 13:20:03 GMT` (the value may hold colons).
public struct MockAppleFault: Sendable, Hashable, CustomStringConvertible {
    /// What happens to a request.
    public enum Action: Sendable, Hashable {
        /// Answer this status (200 to 599: ``MockAppleFault/statuses``) with this text, or with Apple's text for the
        /// status when `nil`, and a `Retry-After` header with this value when it is not `nil` (sent as is, so that
        /// clients can be fed malformed ones).
        case status(Int, text: String? = nil, retryAfter: String? = nil)
        /// Wait this long, then answer normally.
        case delay(Duration)
        /// Close the connection without an answer.
        case drop
        /// Send the answer's status and headers at once and its body this long after (a connection that stalls
        /// mid-answer); an answer without a body (a 304, an update's 200) is sent whole this long after.
        case stall(Duration)
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

    /// Parses `ENDPOINT:ACTION[:COUNT]`, or `ENDPOINT:STATUS[:COUNT]:retry-after=VALUE` (see the type's
    /// documentation).
    ///
    /// - Throws: ``MockAppleError/Code/invalidConfiguration`` for anything else.
    public init(parsing text: String) throws(MockAppleError) {
        var head = Substring(text)
        var retryAfter: String?
        if let option = text.firstRange(of: ":" + Self.retryAfterOption) {
            let value = text[option.upperBound...]
            // Visible ASCII and inner spaces only: a header value, never a line break.
            guard let first = value.first, let last = value.last, first != " ", last != " ",
                value.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) })
            else { throw Self.invalid(text) }
            retryAfter = String(value)
            head = text[..<option.lowerBound]
        }
        let parts = head.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
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
        if let status = Int(parts[1]), Self.statuses.contains(status) {
            action = .status(status, retryAfter: retryAfter)
        } else if retryAfter != nil {
            throw Self.invalid(text)  // only a status carries a header
        } else if parts[1] == "drop" {
            action = .drop
        } else if parts[1].hasPrefix("delay="), let duration = Self.duration(parts[1].dropFirst(6)) {
            action = .delay(duration)
        } else if parts[1].hasPrefix("stall="), let duration = Self.duration(parts[1].dropFirst(6)) {
            action = .stall(duration)
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

    /// `ENDPOINT:ACTION:COUNT`, followed by `:retry-after=VALUE` when a status carries one.
    public var description: String {
        let action: String
        var option = ""
        switch self.action {
        case .status(let status, _, let retryAfter):
            action = String(status)
            if let retryAfter { option = ":\(Self.retryAfterOption)\(retryAfter)" }
        case .delay(let duration): action = "delay=\(RetryMilliseconds.of(duration))ms"
        case .drop: action = "drop"
        case .stall(let duration): action = "stall=\(RetryMilliseconds.of(duration))ms"
        }
        return "\(endpoint?.rawValue ?? "all"):\(action):\(count)\(option)"
    }

    /// The statuses a fault can answer: a final HTTP status, as Apple's services answer them (an informational 1xx
    /// is not an answer, and HTTP has no status beyond 599).
    public static let statuses = 200...599

    /// Throws when the mock cannot play this fault: a status outside ``statuses``.
    ///
    /// - Throws: ``MockAppleError/Code/invalidConfiguration``.
    func validate() throws(MockAppleError) {
        if case .status(let status, _, _) = action, !Self.statuses.contains(status) {
            throw MockAppleError(
                .invalidConfiguration, "a fault's status is between 200 and 599; got \(status) in \(self)")
        }
    }

    /// The option that adds a `Retry-After` header to a status.
    private static let retryAfterOption = "retry-after="

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
                + "drop, delay=DURATION or stall=DURATION, or ENDPOINT:STATUS[:COUNT]:retry-after=VALUE; got \(text)")
    }
}

/// Whole milliseconds of a duration, for descriptions.
enum RetryMilliseconds {
    static func of(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
