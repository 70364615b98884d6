import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitTestSupport
import AttestKitWire
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The Hummingbird ``AttestKitMiddleware`` under each enforcement mode, with the DeviceCheck-less fallbacks: the
/// decision of ``RouteGuard`` on the context, refusals answered with the API's envelope.
@Suite("AttestKitMiddleware enforcement modes")
struct EnforcementMiddlewareTests {
    static let debugToken = "a-debug-token-for-the-simulator-and-ci-0001"

    static func server() throws -> AttestKitServer {
        var configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: Fixture.apple.trustAnchors, adminToken: Fixture.adminToken,
            backendTokens: [Fixture.backendToken], logLevel: .critical)
        configuration.debugTokens = [debugToken]
        return try AttestKitServer(
            configuration: configuration, store: MemoryAttestationStore(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// `trust|enforced|refusal` of the decision on the context.
    static func describe(_ context: ServerRequestContext) -> String {
        let attestation = context.attestation
        return "\(attestation?.trust?.rawValue ?? "none")|\(attestation?.enforced ?? false)|"
            + "\(attestation?.refusal?.code.rawValue ?? "-")|\(context.attestedKey == nil ? "nokey" : "key")"
    }

    static func headers(_ device: SimulatedDevice, _ keyID: KeyID, target: String) throws -> HTTPFields {
        let milliseconds = Int64(Date().timeIntervalSince1970 * 1_000)
        let binding = try RequestBinding(
            method: "POST", target: target, body: [UInt8](), freshness: .timestamp(milliseconds: milliseconds))
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var headers = HTTPFields()
        for (name, value) in [
            (AttestKitHeaderNames.keyID, keyID.base64),
            (AttestKitHeaderNames.assertion, Data(assertion).base64EncodedString()),
            (AttestKitHeaderNames.timestamp, String(milliseconds)),
        ] {
            headers[try #require(HTTPField.Name(name))] = value
        }
        return headers
    }

    @Test("enforce refuses, report lets through marked unverified, off does not look; a valid assertion passes")
    func modes() async throws {
        let server = try Self.server()
        let router = server.buildRouter()
        for (group, mode) in [("enforced", EnforcementMode.enforce), ("reported", .report), ("ignored", .off)] {
            let policy = try EnforcementPolicy(group: group, mode: mode)
            router.group(RouterPath(group)).add(
                middleware: AttestKitMiddleware<ServerRequestContext>(
                    guard: try server.routeGuard(group: group, policy: policy))
            ).post("orders") { _, context in Self.describe(context) }
        }
        let app = Application(router: router)
        try await app.test(.router) { client in
            let expectations: [(String, HTTPResponse.Status, String?)] = [
                ("/enforced/orders", .unauthorized, nil),
                ("/reported/orders", .ok, "none|false|assertion_required|nokey"),
                ("/ignored/orders", .ok, "none|false|-|nokey"),
            ]
            for (path, status, body) in expectations {
                try await client.execute(uri: path, method: .post) { response in
                    #expect(response.status == status, "\(path)")
                    if let body { #expect(String(buffer: response.body) == body, "\(path)") }
                }
            }
            let (device, keyID) = try await RouterTests.registeredDevice(client)
            for (path, expected) in [
                ("/enforced/orders", "app_attest|true|-|key"), ("/reported/orders", "app_attest|false|-|key"),
            ] {
                let headers = try Self.headers(device, keyID, target: path)
                try await client.execute(uri: path, method: .post, headers: headers) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(String(buffer: response.body) == expected)
                }
                // The replay: refused when enforced, reported otherwise.
                try await client.execute(uri: path, method: .post, headers: headers) { response in
                    if path.hasPrefix("/enforced") {
                        #expect(response.status == .conflict)
                    } else {
                        #expect(String(buffer: response.body) == "none|false|counter_not_increasing|nokey")
                    }
                }
            }
            let metrics = String(decoding: server.metrics.exposition(), as: UTF8.self)
            #expect(metrics.contains("group=\"reported\""))
            #expect(metrics.contains("mode=\"report\""))
            #expect(metrics.contains("mode=\"enforce\""))
            #expect(!metrics.contains("group=\"ignored\""))
        }
    }

    /// A middleware of the application's own that fills the decision in itself (from a session, say).
    struct ApplicationDecision: RouterMiddleware {
        typealias Context = ServerRequestContext

        func handle(
            _ request: Request, context: Context, next: (Request, Context) async throws -> Response
        ) async throws -> Response {
            var context = context
            context.attestation = RequestAttestation(
                group: "app", trust: .appAttest, key: nil, enforced: true, refusal: nil, stepUp: false)
            return try await next(request, context)
        }
    }

    @Test("nested guards: the inner guard applies its policy to the outer guard's proof, never verifying it again")
    func nestedGuards() async throws {
        let server = try Self.server()
        let router = server.buildRouter()
        let enforce = try EnforcementPolicy(group: "enforce", mode: .enforce)
        let report = try EnforcementPolicy(group: "report", mode: .report)
        let debug = try EnforcementPolicy(group: "debug", mode: .enforce, minimumTrust: .debug)
        for (path, outer, inner) in [
            ("enforce-report", enforce, report), ("report-enforce", report, enforce), ("report-debug", report, debug),
        ] {
            router.group(RouterPath(path))
                .add(middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: outer)))
                .add(middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: inner)))
                .post("orders") { _, context in Self.describe(context) }
        }
        // A guard of the same gate without debug tokens of its own: a debug token (spent by nothing) is checked again.
        let strict = RouteGuard(gate: server.application.gate, policy: debug)
        router.group("debug-strict")
            .add(middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: debug)))
            .add(middleware: AttestKitMiddleware<ServerRequestContext>(guard: strict))
            .post("orders") { _, context in Self.describe(context) }
        router.group("forged").add(middleware: ApplicationDecision())
            .add(middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: enforce)))
            .post("orders") { _, context in Self.describe(context) }
        try await Application(router: router).test(.router) { client in
            let (device, keyID) = try await RouterTests.registeredDevice(client)
            for (path, enforced) in [("/enforce-report/orders", false), ("/report-enforce/orders", true)] {
                // The outer guard verifies the assertion (its counter is spent); the inner one passes it on.
                let headers = try Self.headers(device, keyID, target: path)
                try await client.execute(uri: path, method: .post, headers: headers) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(String(buffer: response.body) == "app_attest|\(enforced)|-|key", "\(path)")
                }
                // The copy: refused outside (enforce-report), or reported outside and refused inside.
                try await client.execute(uri: path, method: .post, headers: headers) { response in
                    #expect(response.status == .conflict, "\(path)")
                }
            }
            try await client.execute(uri: "/report-enforce/orders", method: .post) { response in
                #expect(response.status == .unauthorized)
            }
            // What the outer guard did not prove (a debug token below its least trust, reported) the inner one
            // checks itself, at its own least trust.
            let token: HTTPFields = [try #require(HTTPField.Name(AttestKitHeaderNames.debugToken)): Self.debugToken]
            try await client.execute(uri: "/report-debug/orders", method: .post, headers: token) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "debug|true|-|nokey")
            }
            try await client.execute(uri: "/debug-strict/orders", method: .post, headers: token) { response in
                #expect(response.status == .unauthorized || response.status == .forbidden, "\(response.status)")
            }
            // A decision the application made itself proves nothing to a guard.
            try await client.execute(uri: "/forged/orders", method: .post) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test("a group that is not configured stops the setup, as Vapor and the decision route refuse it; a configured one has its settings")
    func unconfiguredGroups() throws {
        let server = try Self.server()
        let error = #expect(throws: ServerConfigurationError.self) { try server.routeGuard(group: "orderz") }
        #expect(error?.key == "enforcement.groups")
        #expect(error?.reason.contains("'orderz'") == true && error?.reason.contains("default") == true)
        // A name that is not a label is not a group either.
        #expect(throws: ServerConfigurationError.self) { try server.routeGuard(group: "Orders!") }

        var configuration = server.configuration
        configuration.enforcementGroups = ["orders": .init(mode: .report, minimumTrust: .debug)]
        let configured = try AttestKitServer(
            configuration: configuration, store: MemoryAttestationStore(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let orders = try configured.routeGuard(group: "orders")
        #expect(orders.policy.group == "orders" && orders.policy.mode == .report)
        #expect(orders.policy.minimumTrust == .debug)
        #expect(try configured.routeGuard().policy.group == "default")
    }

    @Test(
        "the server's middleware budgets DeviceCheck validations per client behind a trusted proxy, as its own routes do",
        .timeLimit(.minutes(1)))
    func deviceCheckBudgetPerForwardedClient() async throws {
        var configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
            apple: .init(
                privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: Fixture.appleKeyID,
                teamID: Fixture.teamID,
                // Nothing listens there: each validation that is made fails at once (503), after its budget was
                // taken.
                deviceCheckBaseURL: "http://127.0.0.1:9", receiptExchangeURL: "http://127.0.0.1:9/v1/attestationData"),
            trustAnchors: Fixture.apple.trustAnchors, logLevel: .critical)
        configuration.trustedProxies = [try #require(IPNetwork("127.0.0.1"))]
        configuration.deviceTokenValidationsPerClient = 1
        configuration.enforcementGroups = ["orders": .init(minimumTrust: .deviceCheck)]
        let server = try AttestKitServer(
            configuration: configuration, store: MemoryAttestationStore(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let router = Router(context: ServerRequestContext.self)
        let middleware: AttestKitMiddleware<ServerRequestContext> = try server.middleware(group: "orders")
        #expect(middleware.bodyLimit == configuration.bodyLimit)
        configuration.bodyLimit = 2_048
        let small = try AttestKitServer(
            configuration: configuration, store: MemoryAttestationStore(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(try (small.middleware(group: "orders") as AttestKitMiddleware<ServerRequestContext>).bodyLimit == 2_048)
        router.group("orders").add(middleware: middleware).post { _, _ in "ok" }
        // Over a socket: the peer (127.0.0.1, the trusted proxy) is what the default would count.
        try await Application(router: router).test(.live) { client in
            func order(from forwarded: String, token: String) async throws -> (status: Int, code: String?) {
                let headers: HTTPFields = [
                    try #require(HTTPField.Name(AttestKitHeaderNames.deviceToken)): token,
                    try #require(HTTPField.Name("X-Forwarded-For")): forwarded,
                ]
                return try await client.execute(uri: "/orders", method: .post, headers: headers) { response in
                    (Int(response.status.code), RouterTests.code(response))
                }
            }
            let first = try await order(from: "198.51.100.1", token: "AAAA")
            #expect(first.status == 503, "\(first)")
            let again = try await order(from: "198.51.100.1", token: "AAAB")
            #expect(again.status == 429 && again.code == "rate_limited", "\(again)")
            // Another client behind the same proxy has a budget of its own.
            let other = try await order(from: "198.51.100.2", token: "AAAC")
            #expect(other.status == 503, "\(other)")
        }
    }

    @Test("a debug token passes a group that accepts debug trust, and is refused where App Attest is required")
    func debugTokens() async throws {
        let server = try Self.server()
        let router = server.buildRouter()
        let lowest = try EnforcementPolicy(group: "simulator", minimumTrust: .debug)
        router.group("simulator").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: lowest))
        ).post("orders") { _, context in Self.describe(context) }
        router.group("strict").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(group: "default"))
        ).post("orders") { _, context in Self.describe(context) }
        let app = Application(router: router)
        try await app.test(.router) { client in
            let token: HTTPFields = [try #require(HTTPField.Name(AttestKitHeaderNames.debugToken)): Self.debugToken]
            try await client.execute(uri: "/simulator/orders", method: .post, headers: token) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "debug|true|-|nokey")
            }
            try await client.execute(uri: "/strict/orders", method: .post, headers: token) { response in
                #expect(response.status == .forbidden)
                #expect(RouterTests.code(response) == "trust_insufficient")
            }
            let wrong: HTTPFields = [
                try #require(HTTPField.Name(AttestKitHeaderNames.debugToken)): String(repeating: "z", count: 43)
            ]
            try await client.execute(uri: "/simulator/orders", method: .post, headers: wrong) { response in
                #expect(response.status == .unauthorized)
                #expect(RouterTests.code(response) == "debug_token_invalid")
            }
            // Without an Apple key, DeviceCheck tokens cannot be validated: refused.
            let device: HTTPFields = [try #require(HTTPField.Name(AttestKitHeaderNames.deviceToken)): "AAAA"]
            try await client.execute(uri: "/simulator/orders", method: .post, headers: device) { response in
                #expect(response.status == .forbidden)
                #expect(RouterTests.code(response) == "devicecheck_not_configured")
            }
        }
    }

    @Test(
        "rollout through the middleware: a fixed share of 1 000 subjects (caller-given, or the key id sent) is enforced, the same for a subject every time",
        arguments: [0.0, 0.1, 0.5, 1.0])
    func rollout(fraction: Double) async throws {
        let server = try Self.server()
        let router = server.buildRouter()
        let rollout = try Rollout(fraction: fraction, salt: "orders")
        let bySubject = try EnforcementPolicy(group: "by-subject", rollout: rollout)
        let byKey = try EnforcementPolicy(group: "by-key", rollout: rollout)
        let user = try #require(HTTPField.Name("X-User"))
        router.group("by-subject").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(
                guard: try server.routeGuard(policy: bySubject), subject: { request, _ in request.headers[user] })
        ).post("orders") { _, context in Self.describe(context) }
        router.group("by-key").add(
            middleware: AttestKitMiddleware<ServerRequestContext>(guard: try server.routeGuard(policy: byKey))
        ).post("orders") { _, context in Self.describe(context) }
        let keyName = try #require(HTTPField.Name(AttestKitHeaderNames.keyID))
        let app = Application(router: router)
        try await app.test(.router) { client in
            let byKey: @Sendable (String) -> String = RolloutProbe.keyText
            let cases: [(String, HTTPField.Name, @Sendable (String) -> String)] = [
                ("/by-subject/orders", user, { $0 }), ("/by-key/orders", keyName, byKey),
            ]
            for (path, name, spell) in cases {
                // No assertion: an enforced request is refused (401), a reported one goes on unverified (200). A
                // key id is placed by its canonical spelling.
                let result = try await RolloutProbe.run(
                    subjects: 1_000, includes: { rollout.includes(spell($0)) }
                ) { subject in
                    var refused = false
                    try await client.execute(uri: path, method: .post, headers: [name: spell(subject)]) { response in
                        refused = response.status == .unauthorized
                    }
                    return refused
                }
                #expect(result.flipped.isEmpty && result.misplaced.isEmpty, "\(path): \(result)")
                // Binomial: 4 standard deviations of 1 000 draws is at most 0.064 (the share over 20 000 is in Flows).
                #expect(abs(result.share - fraction) <= 0.064, "\(path): share \(result.share) for \(fraction)")
            }
        }
    }

    @Test("the server refuses to start with debug tokens while production keys are allowed")
    func debugTokensInProduction() throws {
        var configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .production, storageURL: "memory:",
            trustAnchors: try TrustAnchors.apple())
        configuration.debugTokens = [Self.debugToken]
        let error = #expect(throws: ServerConfigurationError.self) { try configuration.validate() }
        #expect(error?.key == "debug.tokens")
        configuration.debugTokens = ["too-short"]
        configuration.environments = .development
        #expect(throws: ServerConfigurationError.self) { try configuration.validate() }
    }
}
