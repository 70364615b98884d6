import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import NIOCore
import Prometheus
import Testing
import Vapor
import VaporTesting

/// The routes of `attestkit serve` on the Vapor edge (``AttestKitRoutes``, from the flows' table): each audience's
/// credential, the per-address budgets, session tokens and their keys, key administration, metrics and the
/// application's clock.
@Suite("Vapor routes")
struct VaporRoutesTests {
    /// Backend and admin tokens configured.
    static func credentials(_ configuration: inout AttestKitApplication.Configuration) {
        configuration.backendTokens = [VaporBench.backendToken]
        configuration.adminToken = VaporBench.adminToken
    }

    static func bearer(_ token: String) -> HTTPHeaders { ["Authorization": "Bearer \(token)"] }

    /// The path of `route` with its parameter filled in.
    static func target(_ route: AttestKitRoute) -> String {
        route.path.replacingOccurrences(of: "{keyId}", with: "AAAA")
    }

    @Test("the mounted routes are the table's, the dashboard's included, each with its audience")
    func mounted() async throws {
        try await VaporBench.withApplication { app in
            let mounted = Set(
                app.routes.all.map { route in
                    let path =
                        "/"
                        + route.path.map {
                            $0.description.hasPrefix(":") ? "{\($0.description.dropFirst())}" : $0.description
                        }.joined(separator: "/")
                    return
                        "\(route.method.rawValue) \(path) \(route.userInfo[AttestKitRoutes.audienceKey] as? String ?? "-")"
                })
            let table = Set(AttestKitRoute.all.map { "\($0) \($0.audience.rawValue)" })
            #expect(mounted == table)
            #expect(mounted.filter { $0.contains("/dashboard") }.count == 4)
        }
    }

    @Test("every credentialed route refuses a request without, with a wrong or with the other scope's credential")
    func audiences() async throws {
        try await VaporBench.withApplication(configure: {
            Self.credentials(&$0)
            $0.rateLimits.authFailuresPerIP = 1_000  // not the subject here
        }) { app in
            for route in AttestKitRoutes().routes where route.audience.needsCredential {
                let code: String
                let other: String?
                switch route.audience {
                case .backend: (code, other) = ("backend_unauthorized", VaporBench.adminToken)
                case .operator, .dashboard: (code, other) = ("admin_unauthorized", VaporBench.backendToken)
                default: (code, other) = ("monitoring_unauthorized", nil)
                }
                var cases: [HTTPHeaders] = [[:], Self.bearer("not-the-token-of-anybody-here-0000")]
                if let other { cases.append(Self.bearer(other)) }
                for headers in cases {
                    try await app.testing().test(
                        HTTPMethod(rawValue: route.method), Self.target(route), headers: headers,
                        body: ByteBuffer(string: "{}")
                    ) { response in
                        #expect(response.status == .unauthorized, "\(route) \(headers)")
                        #expect(VaporBench.code(response) == code, "\(route)")
                        #expect(response.headers.first(name: "WWW-Authenticate") == #"Bearer realm="attestkit""#)
                    }
                }
            }
        }
        // Without tokens configured the credentialed routes are off: 503.
        try await VaporBench.withApplication { app in
            try await app.testing().test(.POST, "/v1/assertions/verify", headers: Self.bearer("x")) { response in
                #expect(response.status == .serviceUnavailable && VaporBench.code(response) == "backend_not_configured")
            }
            try await app.testing().test(.GET, "/v1/keys/AAAA") { response in
                #expect(response.status == .serviceUnavailable && VaporBench.code(response) == "admin_not_configured")
            }
        }
    }

    @Test("wrong credentials spend the client's budget: 429 with Retry-After, then even the right one is refused")
    func authFailureBudget() async throws {
        try await VaporBench.withApplication(configure: {
            Self.credentials(&$0)
            $0.rateLimits.authFailuresPerIP = 2
        }) { app in
            for _ in 0..<2 {
                try await app.testing().test(.GET, "/v1/keys/AAAA", headers: Self.bearer("wrong-token-0000000000")) {
                    #expect($0.status == .unauthorized)
                }
            }
            try await app.testing().test(.GET, "/v1/keys/AAAA", headers: Self.bearer(VaporBench.adminToken)) {
                #expect($0.status == .tooManyRequests && VaporBench.code($0) == "rate_limited")
                #expect(Int($0.headers.first(name: "Retry-After") ?? "") ?? 0 > 0)
            }
        }
    }

    @Test("challenges per address: 429 rate_limited with Retry-After once spent; a trusted proxy's clients apart")
    func perAddressLimit() async throws {
        try await VaporBench.withApplication(
            configure: { $0.rateLimits.challengesPerIP = 2 }, trustedProxies: [try #require(IPNetwork("127.0.0.1"))]
        ) { app in
            let body = ByteBuffer(string: #"{"purpose":"attest"}"#)
            let tester = try app.testing(method: .running(port: 0))
            for index in 0..<3 {
                try await tester.test(.POST, "/v1/challenges", headers: ["X-Forwarded-For": "198.51.100.7"], body: body)
                {
                    if index < 2 {
                        #expect($0.status == .created)
                    } else {
                        #expect($0.status == .tooManyRequests && VaporBench.code($0) == "rate_limited")
                        #expect(Int($0.headers.first(name: "Retry-After") ?? "") ?? 0 > 0)
                    }
                }
            }
            // Another client behind the same proxy has its own budget.
            try await tester.test(.POST, "/v1/challenges", headers: ["X-Forwarded-For": "198.51.100.8"], body: body) {
                #expect($0.status == .created)
            }
        }
    }

    @Test(
        "a trusted proxy holding every address is refused, as the service's configuration refuses it",
        arguments: ["0.0.0.0/0", "::/0", "::ffff:0.0.0.0/96"])
    func everyAddressIsNoProxy(network: String) throws {
        let configuration = VaporBench.configuration(policy: nil, deployment: DeploymentPolicy())
        let application = try AttestKitApplication(configuration: configuration, store: MemoryAttestationStore())
        let proxies = [try #require(IPNetwork("10.0.0.0/8")), try #require(IPNetwork(network))]
        #expect {
            _ = try AttestKitIntegration(application, trustedProxies: proxies)
        } throws: { ($0 as? ConfigurationError)?.key == "http.trusted-proxies" }
        // A network of half the addresses is a (large) network of proxies, not every peer.
        _ = try AttestKitIntegration(application, trustedProxies: [try #require(IPNetwork("0.0.0.0/1"))])
    }

    @Test("rate-limit.ipv6-prefix-length: a subscriber's /64s behind a trusted proxy share one budget")
    func ipv6Prefix() async throws {
        try await VaporBench.withApplication(
            configure: {
                $0.rateLimits.challengesPerIP = 2
                $0.rateLimits.ipv6PrefixLength = 48
            }, trustedProxies: [try #require(IPNetwork("127.0.0.1"))]
        ) { app in
            let body = ByteBuffer(string: #"{"purpose":"attest"}"#)
            let tester = try app.testing(method: .running(port: 0))
            var statuses: [UInt] = []
            for client in ["2001:db8:1:1::1", "2001:db8:1:ff::1", "2001:db8:1:ffff::1", "2001:db8:2::1"] {
                try await tester.test(.POST, "/v1/challenges", headers: ["X-Forwarded-For": client], body: body) {
                    statuses.append($0.status.code)
                }
            }
            #expect(statuses == [201, 201, 429, 201])
        }
    }

    @Test(
        "session tokens: issued for an assertion over the request, consumed once; the keys at /.well-known/jwks.json",
        arguments: await VaporStoreKind.available())
    func tokens(kind: VaporStoreKind) async throws {
        let signingKey = TokenSigningKey(privateKey: P256.Signing.PrivateKey())
        try await VaporBench.withApplication(
            on: kind,
            configure: {
                Self.credentials(&$0)
                $0.tokens = try TokenService.Configuration(signingKey: signingKey)
            }
        ) { app in
            let (device, keyID) = try await VaporBench.register(app)
            var token = ""
            let headers = try VaporEnforcementTests.headers(device, keyID, target: "/v1/tokens")
            try await app.testing().test(.POST, "/v1/tokens", headers: headers) { response in
                #expect(response.status == .created)
                token =
                    (try? WireJSON.decode(TokenResponse.self, from: Data(response.body.readableBytesView)))?.token ?? ""
            }
            #expect(!token.isEmpty)
            let consume = ByteBuffer(bytes: Array(try WireJSON.encode(TokenConsumeRequest(token: token))))
            try await app.testing().test(
                .POST, "/v1/tokens/consume", headers: Self.bearer(VaporBench.backendToken), body: consume
            ) {
                #expect($0.status == .ok)
            }
            try await app.testing().test(
                .POST, "/v1/tokens/consume", headers: Self.bearer(VaporBench.backendToken), body: consume
            ) {
                #expect($0.status == .conflict && VaporBench.code($0) == "token_consumed")
            }
            try await app.testing().test(.GET, "/.well-known/jwks.json") { response in
                #expect(response.status == .ok)
                #expect(response.headers.first(name: "Cache-Control") == "public, max-age=300")
                let set = try? WireJSON.decode(JSONWebKeySet.self, from: Data(response.body.readableBytesView))
                #expect(set?.keys.map(\.kid) == [signingKey.kid])
            }
        }
        try await VaporBench.withApplication { app in
            try await app.testing().test(.GET, "/.well-known/jwks.json") {
                #expect($0.status == .serviceUnavailable && VaporBench.code($0) == "tokens_not_configured")
            }
        }
    }

    @Test(
        "key administration: the record, then revoked, and its assertions refused",
        arguments: await VaporStoreKind.available())
    func keyAdministration(kind: VaporStoreKind) async throws {
        try await VaporBench.withApplication(
            on: kind, configure: Self.credentials,
            mount: { app in
                app.grouped(AttestKitMiddleware()).post("orders") { _ in "ok" }
            }
        ) { app in
            let (device, keyID) = try await VaporBench.register(app)
            let path = "/v1/keys/" + (keyID.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let admin = Self.bearer(VaporBench.adminToken)
            try await app.testing().test(.GET, path, headers: admin) { response in
                #expect(response.status == .ok)
                let record = try? WireJSON.decode(KeyRecordResponse.self, from: Data(response.body.readableBytesView))
                #expect(record?.keyId == keyID.base64 && record?.state == "active")
            }
            try await app.testing().test(.POST, path + "/revoke", headers: admin) { response in
                #expect(response.status == .ok)
                let record = try? WireJSON.decode(KeyRecordResponse.self, from: Data(response.body.readableBytesView))
                #expect(record?.state == "revoked")
            }
            let headers = try VaporEnforcementTests.headers(device, keyID, target: "/orders")
            try await app.testing().test(.POST, "/orders", headers: headers) {
                #expect($0.status == .forbidden && VaporBench.code($0) == "key_revoked")
            }
            try await app.testing().test(.GET, "/v1/keys/AAAA", headers: admin) {
                #expect($0.status == .badRequest || $0.status == .notFound)
            }
        }
    }

    @Test(
        "key deletion: 204 without a body, the key gone (404 after), its assertions refused as key_not_found",
        arguments: await VaporStoreKind.available())
    func keyDeletion(kind: VaporStoreKind) async throws {
        try await VaporBench.withApplication(
            on: kind, configure: Self.credentials,
            mount: { app in
                app.grouped(AttestKitMiddleware()).post("orders") { _ in "ok" }
            }
        ) { app in
            let (device, keyID) = try await VaporBench.register(app)
            let path = "/v1/keys/" + (keyID.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let admin = Self.bearer(VaporBench.adminToken)
            try await app.testing().test(.DELETE, path) { response in
                #expect(response.status == .unauthorized && VaporBench.code(response) == "admin_unauthorized")
            }
            try await app.testing().test(.DELETE, path, headers: admin) { response in
                #expect(response.status == .noContent && response.body.readableBytes == 0)
                #expect(response.headers.first(name: .contentType) == nil)
            }
            try await app.testing().test(.DELETE, path, headers: admin) {
                #expect($0.status == .notFound && VaporBench.code($0) == "key_not_found")
            }
            let headers = try VaporEnforcementTests.headers(device, keyID, target: "/orders")
            try await app.testing().test(.POST, "/orders", headers: headers) {
                #expect($0.status == .forbidden && VaporBench.code($0) == "key_not_found")
            }
        }
    }

    @Test("GET /metrics prints the application's metrics from the registry given; 503 without one")
    func metrics() async throws {
        let registry = PrometheusCollectorRegistry()
        try await VaporBench.withApplication(
            configure: Self.credentials, metrics: FlowMetrics(factory: PrometheusMetricsFactory(registry: registry)),
            prometheus: registry
        ) { app in
            try await VaporBench.register(app)
            try await app.testing().test(.GET, "/metrics") { #expect($0.status == .unauthorized) }
            try await app.testing().test(.GET, "/metrics", headers: Self.bearer(VaporBench.backendToken)) { response in
                #expect(response.status == .ok)
                #expect(response.headers.first(name: "Content-Type")?.hasPrefix("text/plain") == true)
                let text = response.body.string
                let accepted = #"attestkit_verifications_total{kind="attestation",outcome="accepted",code=""} 1"#
                #expect(text.contains(accepted))
                #expect(text.contains("attestkit_keys_registered_total") || text.contains("attestkit_keys"))
            }
        }
        try await VaporBench.withApplication(configure: Self.credentials) { app in
            try await app.testing().test(.GET, "/metrics", headers: Self.bearer(VaporBench.adminToken)) {
                #expect($0.status == .serviceUnavailable && VaporBench.code($0) == "metrics_not_configured")
            }
        }
    }

    @Test("the application's clock, not the wall's: challenge expiry and key registration")
    func injectedClock() async throws {
        // The software Apple dates the attestation by the same fixed time: on a loaded machine the test may reach
        // the registration minutes after it started.
        let fixed = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        try await VaporBench.withApplication(configure: Self.credentials, now: { fixed }) { app in
            try await app.testing().test(.POST, "/v1/challenges", body: ByteBuffer(string: #"{"purpose":"attest"}"#)) {
                let challenge = try? WireJSON.decode(ChallengeResponse.self, from: Data($0.body.readableBytesView))
                #expect(challenge?.expiresAt == APITime.format(fixed.addingTimeInterval(300)))
            }
            let (_, keyID) = try await VaporBench.register(app, at: fixed)
            let stored = try await app.attestKit?.application.store.key(keyID)
            #expect(stored?.createdAt == fixed)
        }
    }

    @Test("probes: /health, /ready")
    func probes() async throws {
        try await VaporBench.withApplication { app in
            try await app.testing().test(.GET, "/health") { #expect($0.status == .ok && $0.body.string.contains("ok")) }
            try await app.testing().test(.GET, "/ready") {
                #expect($0.status == .ok && $0.body.string.contains("ready"))
            }
        }
    }

    @Test("a draining application answers /ready with 503 draining and still serves; the lifecycle drains on shutdown")
    func draining() async throws {
        var drained: AttestKitApplication?
        try await VaporBench.withApplication { app in
            let application = try #require(app.attestKit?.application)
            drained = application
            #expect(!application.isDraining)
            #expect(application.startDraining())
            #expect(!application.startDraining())
            try await app.testing().test(.GET, "/ready") {
                let refusal = try? WireJSON.decode(ErrorResponse.self, from: Data($0.body.readableBytesView))
                #expect($0.status == .serviceUnavailable && refusal?.error.code == "draining")
            }
            try await app.testing().test(.GET, "/health") { #expect($0.status == .ok) }
            try await app.testing().test(.POST, "/v1/challenges", body: ByteBuffer(string: #"{"purpose":"attest"}"#)) {
                #expect($0.status == .created)
            }
        }
        #expect(drained?.isDraining == true)
        // A fresh application is not draining until Vapor shuts down.
        var shutDown: AttestKitApplication?
        try await VaporBench.withApplication { app in
            shutDown = app.attestKit?.application
            #expect(shutDown?.isDraining == false)
        }
        #expect(shutDown?.isDraining == true)
    }
}
