import AttestKit
import AttestKitAppleMock
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Each route has one audience and checks it before anything happens: backend routes need a backend token, operator
/// routes the admin token, `/metrics` either, and a refused request changes no state.
@Suite("Trust boundaries")
struct TrustBoundaryTests {
    static let wrongCredentials: [[(String, String)]] = [
        [],
        [("Authorization", "Bearer \(Fixture.adminToken)")],  // the operator's scope opens no backend route
        [("Authorization", "Bearer \(Fixture.backendToken)x")],
        [("Authorization", "Bearer \(String(Fixture.backendToken.dropLast()))")],
        [("Authorization", "Basic \(Fixture.backendToken)")],
        [("Authorization", Fixture.backendToken)],
        [("Authorization", "Bearer ")],
        [("Authorization", "Bearer \(Fixture.backendToken)"), ("Authorization", "Bearer \(Fixture.backendToken)")],
    ]

    @Test(
        "backend routes refuse a missing or wrong token with 401 and change nothing", arguments: await StoreKind.all())
    func backendRoutesNeedTheBackendToken(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.sendsBackendToken = false
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let challenge = try await device.assertChallenge()
            let body = try device.verifyBody(freshness: challenge)
            for headers in Self.wrongCredentials {
                let answer = try await harness.post("/v1/assertions/verify", body, headers: headers)
                #expect(answer.status == 401 && answer.errorCode == "backend_unauthorized", "\(headers): \(answer)")
                for path in ["/v1/devicecheck/query", "/v1/devicecheck/update", "/v1/devicecheck/validate"] {
                    let deviceCheck = try await harness.post(
                        path, ["deviceToken": .string(Fixture.deviceToken()), "bit0": true], headers: headers)
                    #expect(deviceCheck.status == 401 && deviceCheck.errorCode == "backend_unauthorized", "\(path)")
                }
            }
            // Nothing happened: Apple was never called, the challenge is unused and the counter did not move, so
            // the very same assertion is accepted with the token.
            #expect(await harness.mock.state.requestCount(.queryTwoBits) == 0)
            #expect(await harness.mock.state.requestCount(.updateTwoBits) == 0)
            #expect(await harness.mock.state.requestCount(.validateDeviceToken) == 0)
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
            let accepted = try await harness.post("/v1/assertions/verify", body, headers: ServerHarness.backend)
            #expect(accepted.status == 200 && accepted.int("counter") == 1, "\(accepted)")
        }
    }

    @Test("operator routes refuse the backend token")
    func operatorRoutesRefuseTheBackendToken() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            let path = "/v1/keys/\(device.keyID.pathComponent)"
            let read = try await harness.get(path, headers: ServerHarness.backend)
            #expect(read.status == 401 && read.errorCode == "admin_unauthorized", "\(read)")
            let revoke = try await harness.post(path + "/revoke", .raw(""), headers: ServerHarness.backend)
            #expect(revoke.status == 401 && revoke.errorCode == "admin_unauthorized", "\(revoke)")
            #expect(try await harness.store.key(device.keyID)?.state == .active)
        }
    }

    @Test("several backend tokens are accepted at once (rotation)")
    func rotation() async throws {
        var options = ServerHarness.Options()
        let next = "e2e-backend-token-next-000000"
        options.backendTokens = [Fixture.backendToken, next]
        try await ServerHarness.with(.sqlite, options) { harness in
            let device = try await TestDevice.registered(harness)
            for token in [Fixture.backendToken, next] {
                let answer = try await harness.post(
                    "/v1/assertions/verify", try device.verifyBody(freshness: device.now),
                    headers: [("Authorization", "bearer \(token)")])
                #expect(answer.status == 200, "\(answer)")
            }
        }
    }

    /// The admin token a rotation moves to; ``Fixture/adminToken`` is the previous one.
    static let nextAdminToken = "e2e-admin-token-next-000000"

    /// Sends `token` as an admin credential everywhere one is taken: an operator route, `/metrics`, the dashboard's
    /// bearer and its login form. Returns the four statuses.
    static func adminAnswers(_ harness: ServerHarness, token: String, keyPath: String) async throws -> [Int] {
        let bearer = [("Authorization", "Bearer \(token)")]
        let key = try await harness.get(keyPath, headers: bearer)
        let metrics = try await harness.get("/metrics", headers: bearer)
        let dashboard = try await harness.get("/dashboard", headers: bearer)
        let login = try await harness.send(.POST, "/dashboard/login", body: Array("token=\(token)".utf8))
        if key.status == 401 { #expect(key.errorCode == "admin_unauthorized", "\(key)") }
        if metrics.status == 401 { #expect(metrics.errorCode == "monitoring_unauthorized", "\(metrics)") }
        if dashboard.status == 401 { #expect(dashboard.errorCode == "admin_unauthorized", "\(dashboard)") }
        if login.status == 401 {
            #expect(login.header("Set-Cookie") == nil && login.text.contains("not the admin token"), "\(login)")
        }
        return [key.status, metrics.status, dashboard.status, login.status]
    }

    @Test(
        "admin token rotation: current and previous admin tokens open operator routes, /metrics, the dashboard",
        arguments: await StoreKind.all())
    func adminRotation(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.adminToken = Self.nextAdminToken
        options.adminPreviousTokens = [Fixture.adminToken]
        options.sendsBackendToken = false
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let keyPath = "/v1/keys/\(device.keyID.pathComponent)"
            for token in [Self.nextAdminToken, Fixture.adminToken] {
                let answers = try await Self.adminAnswers(harness, token: token, keyPath: keyPath)
                #expect(answers == [200, 200, 200, 303], "\(token)")
            }
            for token in ["e2e-admin-token-of-nobody-0000", Self.nextAdminToken + "x", Fixture.backendToken] {
                let answers = try await Self.adminAnswers(harness, token: token, keyPath: keyPath)
                let metrics = token == Fixture.backendToken ? 200 : 401  // a backend token scrapes
                #expect(answers == [401, metrics, 401, 401], "\(token)")
            }
            // Another scope: neither admin token opens a backend route, and nothing moved.
            let body = try device.verifyBody(freshness: device.now)
            for token in [Fixture.adminToken, Self.nextAdminToken] {
                let answer = try await harness.post(
                    "/v1/assertions/verify", body, headers: [("Authorization", "Bearer \(token)")])
                #expect(answer.status == 401 && answer.errorCode == "backend_unauthorized", "\(answer)")
            }
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
            #expect(try await harness.store.key(device.keyID)?.state == .active)
        }
    }

    @Test("admin token rotation: once removed from admin.previous-tokens, the previous admin token is refused")
    func adminRotationEnds() async throws {
        var options = ServerHarness.Options()
        options.adminToken = Self.nextAdminToken
        // During the rotation the previous token is accepted; the rotation's last roll drops it.
        for (previousTokens, expected) in [([Fixture.adminToken], [200, 200, 200, 303]), ([], [401, 401, 401, 401])] {
            options.adminPreviousTokens = previousTokens
            try await ServerHarness.with(.sqlite, options) { harness in
                let device = try await TestDevice.registered(harness)
                let keyPath = "/v1/keys/\(device.keyID.pathComponent)"
                let previous = try await Self.adminAnswers(harness, token: Fixture.adminToken, keyPath: keyPath)
                #expect(previous == expected, "admin.previous-tokens: \(previousTokens.count)")
                let current = try await Self.adminAnswers(harness, token: Self.nextAdminToken, keyPath: keyPath)
                #expect(current == [200, 200, 200, 303])
            }
        }
    }

    @Test("without backend tokens, backend routes answer 503 backend_not_configured")
    func backendNotConfigured() async throws {
        var options = ServerHarness.Options()
        options.backendTokens = []
        try await ServerHarness.with(.sqlite, options) { harness in
            let device = try await TestDevice.registered(harness)
            let answer = try await harness.post(
                "/v1/assertions/verify", try device.verifyBody(freshness: device.now), allow5xx: true)
            #expect(answer.status == 503 && answer.errorCode == "backend_not_configured", "\(answer)")
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
            let deviceCheck = try await harness.post(
                "/v1/devicecheck/validate", ["deviceToken": .string(Fixture.deviceToken())], allow5xx: true)
            #expect(deviceCheck.status == 503 && deviceCheck.errorCode == "backend_not_configured")
        }
    }

    @Test("metrics need the backend or the admin token; health and ready stay open")
    func metricsNeedACredential() async throws {
        var options = ServerHarness.Options()
        options.sendsBackendToken = false
        try await ServerHarness.with(.sqlite, options) { harness in
            let open = try await harness.get("/metrics")
            #expect(open.status == 401 && open.errorCode == "monitoring_unauthorized", "\(open)")
            for headers in [ServerHarness.backend, ServerHarness.admin] {
                let metrics = try await harness.get("/metrics", headers: headers)
                #expect(metrics.status == 200, "\(metrics)")
            }
            #expect(try await harness.get("/health").status == 200)
            #expect(try await harness.get("/ready").status == 200)
            // App routes need no credential.
            _ = try await harness.challenge()
        }
    }

    @Test("a second listener keeps backend, operator and metrics routes off the public interface")
    func backendListener() async throws {
        var options = ServerHarness.Options()
        options.backendListener = true
        try await ServerHarness.with(.sqlite, options) { harness in
            #expect(harness.backendURL != harness.apiURL)
            // Apps register on the public listener and the backend verifies on its own.
            let device = try await TestDevice.registered(harness)
            let verified = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(verified.status == 200, "\(verified)")
            let key = try await harness.get("/v1/keys/\(device.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(key.status == 200, "\(key)")

            // The public listener does not know the backend's routes, even with the right token.
            let body = try device.verifyBody(freshness: device.now)
            let routes: [(HTTPMethod, String, [(String, String)])] = [
                (.POST, "/v1/assertions/verify", ServerHarness.backend),
                (.POST, "/v1/devicecheck/query", ServerHarness.backend),
                (.GET, "/v1/keys/\(device.keyID.pathComponent)", ServerHarness.admin),
                (.POST, "/v1/keys/\(device.keyID.pathComponent)/revoke", ServerHarness.admin),
                (.GET, "/metrics", ServerHarness.admin),
            ]
            for (method, path, headers) in routes {
                let answer = try await harness.send(
                    method, path, body: method == .POST ? body.bytes : nil, headers: headers, to: .publicListener)
                #expect(answer.status == 404 && answer.errorCode == "not_found", "\(path): \(answer)")
            }
            #expect(try await harness.store.key(device.keyID)?.state == .active)
            #expect(try await harness.send(.GET, "/health", to: .publicListener).status == 200)

            // The backend listener does not serve app routes.
            let challenge = try await harness.send(.POST, "/v1/challenges", body: [], to: .backendListener)
            #expect(challenge.status == 404 && challenge.errorCode == "not_found", "\(challenge)")
            #expect(try await harness.send(.GET, "/ready", to: .backendListener).status == 200)
        }
    }
}

/// The service always requires the attestation's receipt, and only Apple's receipt signer may sign it.
@Suite("Trust boundaries: receipts in attestations")
struct AttestationReceiptBoundaryTests {
    @Test(
        "an attestation whose receipt was removed, emptied or signed by another certificate is refused",
        arguments: await StoreKind.all())
    func receiptIsRequiredAndApples(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            var cases: [(String, ([UInt8]) throws -> [UInt8], String)] = [
                ("removed", { try SoftwareApple.replacingReceipt(in: $0, with: nil) }, "receipt_missing"),
                ("emptied", { try SoftwareApple.replacingReceipt(in: $0, with: []) }, "receipt_missing"),
            ]
            for impostor in [ReceiptImpostor.signerWithoutMarker, .intermediateWithoutMarker, .markersSwapped] {
                cases.append(
                    (
                        "\(impostor)",
                        { object in
                            let receipt = try #require(try AttestationObject(bytes: object).receipt)
                            return try SoftwareApple.replacingReceipt(
                                in: object, with: try Fixture.apple.resigning(receipt, as: impostor))
                        }, "receipt_signer_not_authorized"
                    ))
            }
            for (name, mutate, code) in cases {
                let device = TestDevice(harness)
                let challenge = try await harness.challenge()
                let object = try mutate(try device.attestation(for: challenge))
                let answer = try await harness.post(
                    "/v1/attestations", device.attestationBody(object, challengeID: challenge.id))
                #expect(answer.status == 403 && answer.errorCode == code, "\(name): \(answer)")
                #expect(try await harness.store.key(device.keyID) == nil, "\(name): registered")
            }
        }
    }
}
