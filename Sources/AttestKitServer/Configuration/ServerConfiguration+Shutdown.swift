import AttestKitFlows

extension ServerConfiguration {
    /// How `attestkit serve` stops (``DrainService``): on SIGTERM or SIGINT it drains, `/ready` answering 503
    /// `draining` while every other route is still served, for ``drainPeriod``; then the listener closes, in-flight
    /// requests finish, the background services stop and the process exits 0. A second signal ends the drain at
    /// once; ``gracePeriod`` bounds the whole shutdown (past it, whatever still runs is cancelled).
    ///
    /// A load balancer that probes `/ready` must notice the 503 within the drain period: make ``drainPeriod`` longer
    /// than its probe interval times its failure threshold. One that does not probe (nginx open source) must retry a
    /// refused connection on another replica.
    public struct Shutdown: Sendable, Hashable {
        /// How long requests are still served after the signal, `/ready` answering 503 (`shutdown.drain-period`).
        public var drainPeriod: Duration
        /// The most the whole shutdown may take, drain included (`shutdown.grace-period`).
        public var gracePeriod: Duration

        /// Creates shutdown settings.
        ///
        /// - Parameters:
        ///   - drainPeriod: 5 seconds by default; 0 closes the listener at once.
        ///   - gracePeriod: 30 seconds by default; at least a second more than the drain period.
        public init(drainPeriod: Duration = .seconds(5), gracePeriod: Duration = .seconds(30)) {
            self.drainPeriod = drainPeriod
            self.gracePeriod = gracePeriod
        }

        /// Refuses a drain period outside 0 to 3600 seconds and a grace period less than a second over the drain
        /// period, not positive or above 3600 seconds.
        /// - Throws: ``ServerConfigurationError`` naming the setting.
        func validate() throws(ServerConfigurationError) {
            guard drainPeriod >= .zero, drainPeriod <= .seconds(3_600) else {
                throw ServerConfigurationError("shutdown.drain-period", "is 0 to 3600 seconds")
            }
            guard gracePeriod > .zero, gracePeriod <= .seconds(3_600) else {
                throw ServerConfigurationError("shutdown.grace-period", "is more than 0 and at most 3600 seconds")
            }
            // The requests accepted in the drain's last moments need time to be answered once it ends.
            guard gracePeriod >= drainPeriod + .seconds(1) else {
                throw ServerConfigurationError(
                    "shutdown.grace-period",
                    "is at least a second more than shutdown.drain-period (the requests accepted as the drain ends "
                        + "must still be answered)")
            }
        }

        /// The `shutdown.*` settings, from the reader scoped to `shutdown`, over the defaults.
        static func read(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> Shutdown {
            var shutdown = Shutdown()
            if let period = try duration(settings, "drain-period") { shutdown.drainPeriod = period }
            if let period = try duration(settings, "grace-period") { shutdown.gracePeriod = period }
            return shutdown
        }

        /// The seconds of `name` as a duration, to the millisecond; ``validate()`` checks the range, this only keeps
        /// the conversion finite.
        private static func duration(
            _ settings: StrictConfigReader, _ name: String
        ) throws(ServerConfigurationError) -> Duration? {
            guard let seconds = try settings.double(name) else { return nil }
            guard seconds.isFinite, abs(seconds) <= 1_000_000 else {
                throw ServerConfigurationError(settings.key(name), "is 0 to 3600 seconds")
            }
            return .milliseconds(Int64((seconds * 1_000).rounded()))
        }
    }
}
