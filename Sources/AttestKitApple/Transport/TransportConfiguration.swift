/// How calls to Apple are sent: the deadline of one call (retries included), the response size cap and the retry
/// policy.
///
/// With AsyncHTTPClient's default configuration (and so `HTTPClient.shared`), a connection that cannot be
/// established is retried by the client's pool until the call's deadline, which then fails with
/// ``AppleServiceError/Code/timeout``. A client configured with `connectionPool.retryConnectionEstablishment = false`
/// reports it at once, and the ``retry`` policy counts it as an attempt (``AppleServiceError/Code/transport``).
/// Consider `redirectConfiguration = .disallow` too: Apple does not redirect, and a provider token must not follow
/// a redirect elsewhere.
public struct TransportConfiguration: Sendable, Hashable {
    /// The longest one call may take, every retry and wait included; past it the call fails with
    /// ``AppleServiceError/Code/timeout``.
    public var timeout: Duration
    /// The largest response body accepted; a larger one fails with ``AppleServiceError/Code/responseTooLarge``.
    /// Apple's answers are a few hundred bytes (DeviceCheck) or a receipt of a few kilobytes.
    public var maximumResponseSize: Int
    /// When and how often to retry.
    public var retry: RetryPolicy

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - timeout: The deadline of one call, retries included; 15 s by default.
    ///   - maximumResponseSize: The largest response body accepted; 128 KiB by default.
    ///   - retry: The retry policy; three attempts by default.
    public init(
        timeout: Duration = .seconds(15),
        maximumResponseSize: Int = 128 * 1024,
        retry: RetryPolicy = .default
    ) {
        self.timeout = timeout
        self.maximumResponseSize = max(0, maximumResponseSize)
        self.retry = retry
    }
}
