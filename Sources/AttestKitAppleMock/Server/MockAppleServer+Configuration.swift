public import AttestKit
public import Foundation

extension MockAppleServer {
    /// What the mock listens on, whose tokens it accepts, and how it behaves.
    public struct Configuration: Sendable {
        /// The address to bind; loopback by default. The mock is for tests: never expose it.
        public var host: String
        /// The port to bind; 0 picks a free one (read it with ``MockAppleServer/port()``).
        public var port: Int
        /// The PEM public key (P-256) provider tokens must be signed with: the public half of the `.p8` key.
        public var verificationKeyPEM: String
        /// The key id tokens must name in `kid`; `nil` accepts any (a token without one is refused, as Apple does).
        public var keyID: String?
        /// The team id tokens must name in `iss`; `nil` accepts any that is not empty (the receipt exchange requires
        /// the receipt's App ID to be of the token's team).
        public var teamID: String?
        /// The environment the mock plays: receipts of the other one get 400 `Incorrect Environment`.
        public var environment: AppAttestEnvironment
        /// The risk metric (field 17) of the receipts it returns.
        public var riskMetric: Int
        /// How old a provider token may be: Apple's hour by default.
        public var tokenLifetime: TimeInterval
        /// Faults to inject from the start (more can be added through ``MockAppleServer/state``).
        public var faults: [MockAppleFault]
        /// The mock's clock: bit update months, token ages, Not Before and new receipts' times.
        public var now: @Sendable () -> Date

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - verificationKeyPEM: The PEM P-256 public key tokens must verify with.
        ///   - keyID: The `kid` tokens must carry, or `nil` for any (one is required).
        ///   - teamID: The `iss` tokens must carry, or `nil` for any (one is required).
        ///   - environment: The environment it plays; development by default.
        ///   - host: The address to bind; `127.0.0.1` by default.
        ///   - port: The port; 0 (a free one) by default.
        ///   - riskMetric: The risk metric of returned receipts; 1 by default.
        ///   - tokenLifetime: The oldest token accepted, in seconds; 3600 by default.
        ///   - faults: Faults to inject from the start.
        ///   - now: The mock's clock.
        public init(
            verificationKeyPEM: String,
            keyID: String? = nil,
            teamID: String? = nil,
            environment: AppAttestEnvironment = .development,
            host: String = "127.0.0.1",
            port: Int = 0,
            riskMetric: Int = 1,
            tokenLifetime: TimeInterval = 3_600,
            faults: [MockAppleFault] = [],
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.verificationKeyPEM = verificationKeyPEM
            self.keyID = keyID
            self.teamID = teamID
            self.environment = environment
            self.host = host
            self.port = port
            self.riskMetric = riskMetric
            self.tokenLifetime = tokenLifetime
            self.faults = faults
            self.now = now
        }
    }
}
