/// The integrations the shared suite runs against.
enum Edge: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `AttestKitMiddleware` of AttestKitServer and the `AttestKitController`, driven by HummingbirdTesting's
    /// `.router` framework.
    case hummingbird
    /// `AttestKitMiddleware` and `AttestKitRoutes` of AttestKitVapor, driven by VaporTesting (in memory).
    case vapor

    var description: String { rawValue }

    /// Runs `body` with an application of this edge over a running store of `backend`.
    func run(on backend: Backend, _ body: @Sendable (any EdgeDriver) async throws -> Void) async throws {
        try await backend.withStore { store in
            switch self {
            case .hummingbird: try await HummingbirdEdge.run(store: store, body)
            case .vapor: try await VaporEdge.run(store: store, body)
            }
        }
    }

    /// Every edge on every backend to test.
    static func matrix() async -> [(Edge, Backend)] {
        let backends = await Backend.available()
        return allCases.flatMap { edge in backends.map { (edge, $0) } }
    }
}
