/// How a call to Apple is retried after a 429, a 5xx or a connection failure: at most ``maximumAttempts``
/// requests, separated by exponential backoff with full jitter, and never past the call's deadline.
///
/// The wait before retry *n* (1 for the first retry) is a uniformly random duration between zero and
/// `min(maximumDelay, baseDelay × 2^(n-1))` ("full jitter"), or, when Apple sends a valid `Retry-After`
/// (delay-seconds or an IMF-fixdate; a malformed one is ignored), the longer of that and the jittered wait. A
/// `Retry-After` longer than ``maximumDelay`` is never cut short: the call ends at once with the answer it has
/// (e.g. a 429 as ``AppleServiceError/Code/rateLimited`` with ``AppleServiceError/retryAfter``), as it does when a
/// wait would end at or past the call's deadline. Other 4xx answers are never retried: they will not change.
public struct RetryPolicy: Sendable, Hashable {
    /// The most requests one call sends, the first included; 1 disables retries.
    public var maximumAttempts: Int
    /// The cap of the first retry's random wait.
    public var baseDelay: Duration
    /// The cap of every wait.
    public var maximumDelay: Duration

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maximumAttempts: The most requests per call, at least 1 (smaller values count as 1).
    ///   - baseDelay: The cap of the first retry's random wait.
    ///   - maximumDelay: The cap of every wait.
    public init(
        maximumAttempts: Int = 3, baseDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(4)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = max(.zero, baseDelay)
        self.maximumDelay = max(.zero, maximumDelay)
    }

    /// Three attempts, waits capped at 250 ms then 500 ms.
    public static let `default` = RetryPolicy()

    /// One attempt: no retries.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// The cap of the random wait before retry `retry` (1 for the first retry).
    public func delayCap(beforeRetry retry: Int) -> Duration {
        var cap = baseDelay
        for _ in 1..<max(1, retry) {
            cap *= 2
            if cap >= maximumDelay { break }
        }
        return min(cap, maximumDelay)
    }

    /// The wait before retry `retry` (1 for the first retry): full jitter under ``delayCap(beforeRetry:)``, or the
    /// longer of that and Apple's `Retry-After`, capped at ``maximumDelay`` (the transport does not retry at all when
    /// Apple asks for longer).
    ///
    /// - Parameters:
    ///   - retry: 1 for the first retry.
    ///   - retryAfter: The `Retry-After` Apple sent, if any.
    ///   - generator: The randomness of the jitter.
    public func delay(
        beforeRetry retry: Int,
        retryAfter: Duration? = nil,
        using generator: inout some RandomNumberGenerator
    ) -> Duration {
        let cap = delayCap(beforeRetry: retry)
        let capNanoseconds = Self.nanoseconds(cap)
        let jittered: Duration =
            capNanoseconds > 0 ? .nanoseconds(Int64.random(in: 0...capNanoseconds, using: &generator)) : .zero
        guard let retryAfter else { return jittered }
        return min(max(jittered, retryAfter), maximumDelay)
    }

    /// A duration in whole nanoseconds, saturating.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowed) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? .max : sum
    }
}
