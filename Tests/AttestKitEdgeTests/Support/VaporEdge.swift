import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import Foundation
import NIOCore
import NIOHTTP1
import Vapor
import VaporTesting

/// The Vapor integration as an adopter mounts it: the flows on `app.attestKit`, ``AttestKitRoutes`` under `v1`, and
/// `orders` guarded by ``AttestKitMiddleware`` under the group `orders`; driven in memory by VaporTesting, or over a
/// socket.
struct VaporEdge: EdgeDriver {
    let store: any AttestationStore
    let apple: EdgeApple?
    let app: Application
    let method: Application.Method

    static func run(
        store: any AttestationStore, configuration: EdgeConfiguration = EdgeConfiguration(), apple: EdgeApple? = nil,
        over method: Application.Method = .inMemory, _ body: @Sendable (any EdgeDriver) async throws -> Void
    ) async throws {
        try await withApp(configure: { app in
            app.logger.logLevel = .critical
            try configure(app, store: store, configuration: configuration, apple: apple)
            let guarded = app.grouped(
                AttestKitMiddleware(
                    policy: try configuration.enforcementPolicy(),
                    subject: { $0.headers.first(name: EdgeHeaders.subject) })
            ).grouped("orders")
            guarded.post { req in answer(req) }
            guarded.get { req in answer(req) }
            guarded.get("**") { req in answer(req) }
            try await app.asyncBoot()
        }) { app in
            try await body(VaporEdge(store: store, apple: apple, app: app, method: method))
        }
    }

    /// The one place the suite's ``EdgeConfiguration`` becomes Vapor's: the flows on `app.attestKit` and
    /// ``AttestKitRoutes`` under `v1`.
    ///
    /// What today's Vapor API cannot take is left out, and the tests that need it skip Vapor (`// Vapor parity:`):
    /// the session-token routes (`POST /v1/tokens`, `/v1/tokens/consume`), a backend token, a client named by the
    /// application rather than `req.remoteAddress`.
    static func configure(
        _ app: Application, store: any AttestationStore, configuration: EdgeConfiguration, apple: EdgeApple?
    ) throws {
        let verifier = AttestationVerifier(
            configuration: try .init(
                appIDs: [EdgeFixture.appID], environments: .development, trustAnchors: EdgeFixture.apple.trustAnchors))
        var services = AttestKitServices(store: store, verifier: verifier, policy: configuration.policy)
        services.debugTokens = try DebugTokens(configuration.debugTokens, environments: .development)
        if let apple {
            let tokens = try AppleTokenProvider(
                privateKeyPEM: apple.privateKeyPEM, keyID: EdgeApple.keyID, teamID: EdgeApple.teamID)
            services.deviceTokens = DeviceTokenValidator(
                client: DeviceCheckClient(configuration: .init(baseURL: apple.baseURL), tokens: tokens),
                validationsPerClient: configuration.deviceTokenValidationsPerClient)
        }
        app.attestKit = services
        try app.grouped("v1").register(collection: AttestKitRoutes())
    }

    /// The verified key's id, with the decision in the suite's answer headers.
    private static func answer(_ req: Request) -> Response {
        var headers = HTTPHeaders()
        for (name, value) in EdgeHeaders.decision(req.attestKit.attestation) {
            headers.replaceOrAdd(name: name, value: value)
        }
        return Response(status: .ok, headers: headers, body: .init(string: req.attestKit.key?.keyID.base64 ?? "no key"))
    }

    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
    {
        var answer = EdgeAnswer(status: 0, body: [])
        try await app.testing(method: self.method).test(
            HTTPMethod(rawValue: method), target, headers: HTTPHeaders(headers),
            body: body.isEmpty ? nil : ByteBuffer(bytes: body)
        ) { response in
            answer = EdgeAnswer(
                status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                body: Array(response.body.readableBytesView))
        }
        return answer
    }
}
