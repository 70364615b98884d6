import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitWire
import Foundation
import JWTKit
import NIOHTTP1
import Testing

/// `POST /v1/tokens` with a debug token instead of an assertion, through the server's router: a token at trust
/// `debug` that a backend tells apart by its claims, counted apart in `/metrics`; refused for a token off the list,
/// when assertion headers are also sent and fail, for a DeviceCheck token, and with several apps.
@Suite("Token route with debug tokens")
struct DebugTokenRouteTests {
    static let debugToken = "a-debug-token-of-the-simulator-build-0003"

    static func options(apps: [AppID] = [Fixture.appID]) throws -> ServerHarness.Options {
        var options = try TokenRouteTests.options()
        options.debugTokens = [debugToken]
        options.appIDs = apps
        return options
    }

    /// The value of the one sample of `name` whose labels include all of `labels`, in `/metrics`.
    static func sample(_ metrics: String, _ name: String, _ labels: [String]) -> Double? {
        let lines = metrics.split(separator: "\n").filter { line in
            line.hasPrefix(name + "{") && labels.allSatisfy { line.contains($0) }
        }
        guard lines.count == 1, let value = lines[0].split(separator: " ").last else { return nil }
        return Double(value)
    }

    @Test("a debug token buys a token at trust debug; the claims say so; counted apart from assertions")
    func issued() async throws {
        try await ServerHarness.with(.sqlite, try Self.options()) { harness in
            let answer = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.debugToken, Self.debugToken)])
            try #require(answer.status == 201, "\(answer)")
            let token = try #require(answer.string("token"))
            let jwks = try await harness.get("/.well-known/jwks.json")
            let claims = try await JWTKeyCollection().add(jwksJSON: jwks.text)
                .verify(token, as: TokenRouteTests.BackendClaims.self)
            #expect(claims.trust == "debug")
            #expect(claims.sub.value.hasPrefix("debug:") && !claims.sub.value.contains(Self.debugToken))

            // An app's assertion still buys an app_attest token beside it.
            let device = try await TestDevice.registered(harness)
            let (attested, _) = try await TokenRouteTests.requestToken(harness, device)
            try #require(attested.status == 201, "\(attested)")
            let attestedClaims = try await JWTKeyCollection().add(jwksJSON: jwks.text)
                .verify(try #require(attested.string("token")), as: TokenRouteTests.BackendClaims.self)
            #expect(attestedClaims.trust == "app_attest")

            let consumed = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]))
            #expect(consumed.status == 200 && consumed.string("trust") == "debug", "\(consumed)")
            #expect(consumed.string("environment") == "development")
            #expect(consumed.string("appId") == Fixture.appID.description)

            let wrong = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.debugToken, Self.debugToken + "x")])
            #expect(wrong.status == 401 && wrong.errorCode == "debug_token_invalid", "\(wrong)")

            let metrics = try await harness.get("/metrics").text
            let debug = [#"kind="debug_token""#]
            #expect(Self.sample(metrics, "attestkit_verifications_total", debug + [#"outcome="accepted""#]) == 1)
            #expect(
                Self.sample(metrics, "attestkit_verifications_total", debug + [#"code="debug_token_invalid""#]) == 1)
            #expect(Self.sample(metrics, "attestkit_tokens_issued_total", [#"trust="debug""#]) == 1)
            #expect(Self.sample(metrics, "attestkit_tokens_issued_total", [#"trust="app_attest""#]) == 1)
            #expect(
                Self.sample(metrics, "attestkit_verifications_total", [#"kind="assertion""#, #"outcome="accepted""#])
                    == 1)
            // The operator dashboard shows them in their own table.
            let dashboard = try await harness.send(
                .GET, "/dashboard", headers: [("Authorization", "Bearer \(Fixture.adminToken)")])
            let tokens = try #require(dashboard.text.components(separatedBy: #"<section id="tokens">"#).last)
            #expect(tokens.contains(#"<tr><td>debug</td><td class="n">1</td>"#), "\(dashboard.text)")
            #expect(tokens.contains(#"<tr><td>app_attest</td><td class="n">1</td>"#))
        }
    }

    @Test("assertion headers are judged as such even beside a valid debug token; a DeviceCheck token buys nothing")
    func noBypass() async throws {
        try await ServerHarness.with(.sqlite, try Self.options()) { harness in
            let device = try await TestDevice.registered(harness)
            // An assertion over another request, with the right debug token: the assertion is judged, and fails.
            var headers = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: [], freshness: device.now)
            headers.append((AttestKitHeaderNames.debugToken, Self.debugToken))
            let mixed = try await harness.send(.POST, "/v1/tokens", headers: headers)
            #expect(mixed.status == 403 && mixed.errorCode == "signature_invalid", "\(mixed)")
            // A fallback header sent twice (or joined with a comma by a proxy) beside a valid assertion: refused, as
            // on every guarded route, before the assertion is spent.
            let valid = try device.guardedHeaders(method: "POST", target: "/v1/tokens", body: [], freshness: device.now)
            let joined = try await harness.send(
                .POST, "/v1/tokens", headers: valid + [(AttestKitHeaderNames.deviceToken, "AAAA,BBBB")])
            #expect(joined.status == 400 && joined.errorCode == "header_repeated", "\(joined)")
            // A key id alone (no assertion) beside the debug token: still an assertion request, incomplete.
            let partial = try await harness.send(
                .POST, "/v1/tokens",
                headers: [
                    (AttestKitHeaderNames.keyID, device.keyID.base64),
                    (AttestKitHeaderNames.debugToken, Self.debugToken),
                ])
            #expect(partial.status == 401 && partial.errorCode == "assertion_required", "\(partial)")
            let deviceCheck = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.deviceToken, Fixture.deviceToken())])
            // Not sold unless tokens.device-tokens=accept (SteeringRouteTests): refused without asking Apple.
            #expect(
                deviceCheck.status == 403 && deviceCheck.errorCode == "devicecheck_not_configured", "\(deviceCheck)")
            let repeated = try await harness.send(
                .POST, "/v1/tokens",
                headers: [
                    (AttestKitHeaderNames.debugToken, Self.debugToken),
                    (AttestKitHeaderNames.debugToken, Self.debugToken),
                ])
            #expect(repeated.status == 400 && repeated.errorCode == "header_repeated", "\(repeated)")
            let metrics = try await harness.get("/metrics").text
            #expect(Self.sample(metrics, "attestkit_tokens_issued_total", [#"trust="debug""#]) == 0)
        }
    }

    @Test("with several apps a debug token buys no token: 503 debug_token_app_ambiguous")
    func severalApps() async throws {
        let apps = [Fixture.appID, try AppID("\(Fixture.teamID).com.example.other")]
        try await ServerHarness.with(.sqlite, try Self.options(apps: apps)) { harness in
            let answer = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.debugToken, Self.debugToken)], allow5xx: true)
            #expect(answer.status == 503 && answer.errorCode == "debug_token_app_ambiguous", "\(answer)")
        }
    }

    @Test("without debug tokens configured a debug token is refused: 401 debug_token_invalid")
    func notConfigured() async throws {
        try await ServerHarness.with(.sqlite, try TokenRouteTests.options()) { harness in
            let answer = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.debugToken, Self.debugToken)])
            #expect(answer.status == 401 && answer.errorCode == "debug_token_invalid", "\(answer)")
        }
    }
}
