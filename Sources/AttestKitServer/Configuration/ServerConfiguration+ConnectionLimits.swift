import AttestKitFlows

extension ServerConfiguration {
    /// How long a connection may take to send a request or wait between requests, and how many may be open.
    ///
    /// A connection that stalls is closed when its deadline passes, so that silent or slow clients cannot hold file
    /// descriptors: `readTimeout` bounds the time from a connection's accept (or from the first byte of a later
    /// request on a kept-alive connection) until the request's last byte, `idleTimeout` the wait for the next request
    /// after an answer. A request being answered has no deadline here (Apple calls are bounded by `apple.timeout`,
    /// the store by its own). Past `maxConnections` open connections across the server's listeners, a new connection
    /// is accepted and closed at once.
    public struct ConnectionLimits: Sendable, Hashable {
        /// The time a client has to send a whole request (head and body).
        public var readTimeout: Duration
        /// The time a kept-alive connection may wait for its next request.
        public var idleTimeout: Duration
        /// The most connections open at once; `nil` derives it from the descriptor limit (`RLIMIT_NOFILE`) minus
        /// a reserve (see ``DescriptorLimit``).
        public var maxConnections: Int?

        /// Creates limits.
        ///
        /// - Parameters:
        ///   - readTimeout: The time to send a whole request, 10 seconds by default.
        ///   - idleTimeout: The wait for the next request on a kept-alive connection, 30 seconds by default.
        ///   - maxConnections: The most open connections; `nil` (the default) derives it from the descriptor limit.
        public init(
            readTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(30), maxConnections: Int? = nil
        ) {
            self.readTimeout = readTimeout
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
        }

        /// Refuses timeouts outside 10 ms to 10 minutes and a maximum below 1.
        /// - Throws: ``ServerConfigurationError`` naming the setting.
        func validate() throws(ServerConfigurationError) {
            for (key, timeout) in [("http.read-timeout", readTimeout), ("http.idle-timeout", idleTimeout)] {
                guard timeout >= .milliseconds(10), timeout <= .seconds(600) else {
                    throw ServerConfigurationError(key, "is between 0.01 and 600 seconds")
                }
            }
            if let maxConnections, !(1...10_000_000).contains(maxConnections) {
                throw ServerConfigurationError("http.max-connections", "is 1 to 10000000")
            }
        }

        /// The `http.*` connection settings, from the reader scoped to `http`, over the defaults.
        static func read(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> ConnectionLimits {
            var limits = ConnectionLimits()
            if let timeout = try duration(settings, "read-timeout") { limits.readTimeout = timeout }
            if let timeout = try duration(settings, "idle-timeout") { limits.idleTimeout = timeout }
            limits.maxConnections = try settings.int("max-connections")
            return limits
        }

        /// The seconds of `name` in the `http` section as a duration, to the millisecond; ``validate()`` checks the
        /// range, this only keeps the conversion finite.
        private static func duration(
            _ settings: StrictConfigReader, _ name: String
        ) throws(ServerConfigurationError) -> Duration? {
            guard let seconds = try settings.double(name) else { return nil }
            guard seconds.isFinite, abs(seconds) <= 1_000_000 else {
                throw ServerConfigurationError(settings.key(name), "is between 0.01 and 600 seconds")
            }
            return .milliseconds(Int64((seconds * 1_000).rounded()))
        }
    }
}
