import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore

/// The Hummingbird integration as an adopter mounts it: the server's ``AttestKitController`` on the application's
/// router, and `/orders` guarded by ``AttestKitMiddleware`` with the server's guard of the group `orders`; driven
/// without a socket.
struct HummingbirdEdge: EdgeDriver {
    let store: any AttestationStore
    let apple: EdgeApple?
    let client: any TestClientProtocol

    static func run(
        store: any AttestationStore, configuration: EdgeConfiguration, apple: EdgeApple?,
        _ body: @Sendable (any EdgeDriver) async throws -> Void
    ) async throws {
        let server = try server(store: store, configuration: configuration, apple: apple)
        let router = Router(context: ServerRequestContext.self)
        server.controller.addRoutes(to: router)
        let subject = HTTPField.Name(EdgeHeaders.subject)
        let client = HTTPField.Name(EdgeHeaders.client)
        let guarded = router.group("orders").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(
                guard: try server.routeGuard(group: EdgeConfiguration.group),
                subject: { request, _ in subject.flatMap { request.headers[$0] } },
                client: { request, _ in client.flatMap { request.headers[$0] } }))
        guarded.post { _, context in Self.answer(context) }
        guarded.get { _, context in Self.answer(context) }
        guarded.get("**") { _, context in Self.answer(context) }
        try await Application(router: router, logger: silent).test(.router) { client in
            try await body(HummingbirdEdge(store: store, apple: apple, client: client))
        }
    }

    /// The service under `configuration`: the configured group `orders`, a backend token, Apple's DeviceCheck at the
    /// mock, session tokens; what the Hummingbird edge and the decision route (``DecisionEdge``) are built from.
    static func server(
        store: any AttestationStore, configuration: EdgeConfiguration, apple: EdgeApple?
    ) throws -> AttestKitServer {
        var settings = ServerConfiguration(
            appIDs: configuration.apps, environments: .development, storageURL: "memory:",
            apple: apple.map {
                ServerConfiguration.Apple(
                    privateKeyPEM: $0.privateKeyPEM, keyID: EdgeApple.keyID, teamID: EdgeApple.teamID,
                    deviceCheckEnvironment: .development, deviceCheckBaseURL: $0.baseURL,
                    receiptExchangeURL: $0.baseURL + "/v1/attestationData")
            },
            trustAnchors: EdgeFixture.apple.trustAnchors, policy: configuration.policy,
            // Limits of their own are tested where they are the subject: the suite sends many requests.
            rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0),
            adminToken: EdgeConfiguration.adminToken, backendTokens: [EdgeConfiguration.backendToken],
            logLevel: .critical)
        settings.debugTokens = configuration.debugTokens
        settings.ramp = configuration.ramp
        settings.enforcementGroups = [EdgeConfiguration.group: configuration.enforcement]
        settings.deviceTokenValidationsPerClient = configuration.deviceTokenValidationsPerClient
        if configuration.sessionTokens {
            settings.tokens = try TokenService.Configuration(
                signingKey: TokenSigningKey(privateKey: P256.Signing.PrivateKey()))
        }
        return try AttestKitServer(configuration: settings, store: store, logger: silent)
    }

    /// A logger that writes nothing.
    static var silent: Logger { Logger(label: "edge", factory: { _ in SwiftLogNoOpLogHandler() }) }

    /// The verified key's id, with the decision in the suite's answer headers.
    private static func answer(_ context: ServerRequestContext) -> Response {
        var fields = HTTPFields()
        for (name, value) in EdgeHeaders.decision(context.attestation) {
            if let name = HTTPField.Name(name) { fields[name] = value }
        }
        return Response(
            status: .ok, headers: fields,
            body: .init(byteBuffer: ByteBuffer(string: context.attestedKey?.keyID.base64 ?? "no key")))
    }

    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
    {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        let response = try await client.executeRequest(
            uri: target, method: HTTPRequest.Method(method) ?? .get, headers: fields,
            body: body.isEmpty ? nil : ByteBuffer(bytes: body))
        return EdgeAnswer(
            status: Int(response.status.code), headers: response.headers.map { ($0.name.rawName, $0.value) },
            body: Array(response.body.readableBytesView))
    }
}
