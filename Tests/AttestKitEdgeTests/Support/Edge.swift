/// The integrations the shared suite runs against.
enum Edge: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `AttestKitMiddleware` of AttestKitServer and the `AttestKitController`, driven by HummingbirdTesting's
    /// `.router` framework.
    case hummingbird
    /// `AttestKitMiddleware` and `AttestKitRoutes` of AttestKitVapor, driven by VaporTesting (in memory).
    case vapor
    /// `POST /v1/requests/verify` of the service, asked by a backend in any language (``DecisionEdge``).
    case decision

    var description: String { rawValue }

    /// Whether the application can name a request's client (``EdgeHeaders/client``) for the per-client budget of
    /// DeviceCheck validations.
    // Vapor parity: Vapor's AttestKitMiddleware names the client by `req.remoteAddress` only.
    var namesClients: Bool { self != .vapor }

    /// Runs `body` with an application of this edge, built with `configuration`, over a running store of `backend`
    /// (and the mock Apple when the configuration validates DeviceCheck tokens).
    func run(
        on backend: Backend, _ configuration: EdgeConfiguration = EdgeConfiguration(),
        _ body: @Sendable (any EdgeDriver) async throws -> Void
    ) async throws {
        try await backend.withStore { store in
            try await EdgeApple.with(configuration.deviceCheck) { apple in
                switch self {
                case .hummingbird:
                    try await HummingbirdEdge.run(store: store, configuration: configuration, apple: apple, body)
                case .vapor:
                    try await VaporEdge.run(store: store, configuration: configuration, apple: apple, body)
                case .decision:
                    try await DecisionEdge.run(store: store, configuration: configuration, apple: apple, body)
                }
            }
        }
    }

    /// Every edge on every backend to test.
    static func matrix() async -> [(Edge, Backend)] {
        let backends = await Backend.available()
        return allCases.flatMap { edge in backends.map { (edge, $0) } }
    }
}
