import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Vapor
import VaporTesting

/// The Vapor integration as an adopter mounts it: the application on `app.attestKit`, ``AttestKitRoutes``, and
/// `orders` guarded by ``AttestKitMiddleware`` of the configured group `orders`; driven in memory by VaporTesting,
/// or over a socket.
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
                    group: EdgeConfiguration.group, subject: { $0.headers.first(name: EdgeHeaders.subject) })
            ).grouped("orders")
            guarded.post { req in answer(req) }
            guarded.get { req in answer(req) }
            guarded.get("**") { req in answer(req) }
            try await app.asyncBoot()
        }) { app in
            try await body(VaporEdge(store: store, apple: apple, app: app, method: method))
        }
    }

    /// The one place the suite's ``EdgeConfiguration`` becomes Vapor's: the application on `app.attestKit`, built
    /// with the same settings as the Hummingbird edge's service (the group `orders`, a backend token, DeviceCheck at
    /// the mock, session tokens), and ``AttestKitRoutes``.
    ///
    /// The Vapor middleware budgets DeviceCheck validations by the client's address (`req.remoteAddress`, behind
    /// trusted proxies their header), not by a client the application names: the test of a second client skips Vapor.
    static func configure(
        _ app: Application, store: any AttestationStore, configuration: EdgeConfiguration, apple: EdgeApple?
    ) throws {
        var settings = AttestKitApplication.Configuration(
            appIDs: configuration.apps, environments: .development, trustAnchors: EdgeFixture.apple.trustAnchors,
            policy: configuration.policy,
            // Limits of their own are tested where they are the subject: the suite sends many requests.
            rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0),
            adminToken: EdgeConfiguration.adminToken, backendTokens: [EdgeConfiguration.backendToken],
            debugTokens: configuration.debugTokens,
            enforcementGroups: [EdgeConfiguration.group: configuration.enforcement])
        settings.deviceTokenValidationsPerClient = configuration.deviceTokenValidationsPerClient
        settings.ramp = configuration.ramp
        if configuration.sessionTokens {
            settings.tokens = try TokenService.Configuration(
                signingKey: TokenSigningKey(privateKey: P256.Signing.PrivateKey()))
        }
        let clients = try apple.map { apple in
            let tokens = try AppleTokenProvider(
                privateKeyPEM: apple.privateKeyPEM, keyID: EdgeApple.keyID, teamID: EdgeApple.teamID)
            return AppleClients(
                deviceCheck: DeviceCheckClient(configuration: .init(baseURL: apple.baseURL), tokens: tokens),
                deviceCheckEnvironment: .development)
        }
        app.attestKit = try AttestKitIntegration(
            try AttestKitApplication(configuration: settings, store: store, apple: clients, logger: app.logger))
        try app.register(collection: AttestKitRoutes())
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
