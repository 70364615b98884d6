import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Session tokens and debug tokens of the client, with the simulated device and a scripted service: the cache,
/// single flight, the refresh after a backend's refusal, typed errors, and where a debug token replaces App Attest.
@Suite("AttestKitClient session and debug tokens (simulated device, scripted service)")
struct SessionTokenTests {
    typealias App = AppleRulesTests.App

    /// A token answer of `POST /v1/tokens` expiring `lifetime` seconds after the app's clock.
    static func issuing(_ app: App, lifetime: TimeInterval = 300) -> @Sendable (Int) -> FakeService.Answer {
        let clock = app.clock
        return { number in .token("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJrIn0.c2lnbmF0dXJl\(number)", clock.now + lifetime) }
    }

    @Test("a token is fetched with an assertion over POST /v1/tokens and cached until a minute before it expires")
    func cached() async throws {
        let app = App()
        app.service.answerTokens(Self.issuing(app))
        let first = try await app.client.sessionToken()
        #expect(try await app.client.sessionToken() == first)
        #expect(app.service.tokenRequests.count == 1)
        let sent = try #require(app.service.tokenRequests.first)
        #expect(sent.keyID == app.keyID && sent.keyID != nil && sent.hasAssertion && sent.debugToken == nil)
        #expect(!first.description.contains(first.token))

        app.clock.advance(239)
        #expect(try await app.client.sessionToken() == first)
        #expect(app.service.tokenRequests.count == 1)
        app.clock.advance(2)  // 59 seconds left: inside the refresh margin
        let second = try await app.client.sessionToken()
        #expect(second != first && app.service.tokenRequests.count == 2)
        #expect(app.provider.calls.attestKey == 1)
        await app.client.invalidateSessionToken()
        #expect(try await app.client.sessionToken() != second)
        #expect(app.service.tokenRequests.count == 3)
    }

    @Test("concurrent callers share one token request (single flight)")
    func singleFlight() async throws {
        let app = App()
        app.service.answerTokens(Self.issuing(app))
        app.service.tokenDelay(milliseconds: 200)
        let tokens = try await withThrowingTaskGroup(of: SessionToken.self) { group in
            for _ in 0..<10 { group.addTask { try await app.client.sessionToken() } }
            return try await group.reduce(into: [SessionToken]()) { $0.append($1) }
        }
        #expect(tokens.count == 10 && Set(tokens).count == 1)
        #expect(app.service.tokenRequests.count == 1)
        #expect(app.provider.calls.attestKey == 1)
    }

    @Test("a backend's 401 or 409 token_consumed gets one new token and a second try; a second refusal is reported")
    func refreshOnce() async throws {
        let app = App()
        app.service.answerTokens(Self.issuing(app))
        let first = try await app.client.sessionToken()
        let firstHeader = "Bearer " + first.token
        app.service.answerApp { $0.authorization == firstHeader ? .status(409, "token_consumed") : nil }
        let (data, response) = try await app.client.data(withSessionToken: URLRequest(url: FakeService.appURL))
        #expect(response.statusCode == 200 && String(decoding: data, as: UTF8.self) == #"{"ok":true}"#)
        #expect(app.service.tokenRequests.count == 2)
        let sent = app.service.requests
        #expect(sent.count == 2 && sent[0].authorization == firstHeader && sent[1].authorization != firstHeader)
        #expect(sent.allSatisfy { $0.keyID == nil && $0.authorization?.hasPrefix("Bearer eyJ") == true })

        app.service.answerApp { _ in .status(401, "token_expired") }
        let error = await #expect(throws: AttestKitClientError.self) {
            try await app.client.data(withSessionToken: URLRequest(url: FakeService.appURL))
        }
        #expect(error?.code == .httpError && error?.status == 401 && error?.serviceCode == "token_expired")
        #expect(app.service.tokenRequests.count == 3)  // one refresh, not a loop
        #expect(app.service.requests.count == 4)

        app.service.answerApp { _ in .status(403, "forbidden") }
        let forbidden = await #expect(throws: AttestKitClientError.self) {
            try await app.client.data(withSessionToken: URLRequest(url: FakeService.appURL))
        }
        #expect(forbidden?.status == 403 && app.service.tokenRequests.count == 3)  // not a token problem

        // The backend's own conflict is not a consumed token: the request (an order, say) is not sent again.
        let before = app.service.requests.count
        app.service.answerApp { _ in .status(409, "order_exists") }
        let conflict = await #expect(throws: AttestKitClientError.self) {
            try await app.client.data(withSessionToken: URLRequest(url: FakeService.appURL))
        }
        #expect(conflict?.status == 409 && conflict?.serviceCode == "order_exists")
        #expect(app.service.tokenRequests.count == 3 && app.service.requests.count == before + 1)
    }

    @Test("errors are typed: tokens not configured, an answer that is no token or expired, no manager")
    func typedErrors() async throws {
        let app = App()
        app.service.answerTokens { _ in .status(503, "tokens_not_configured") }
        let unconfigured = await #expect(throws: AttestKitClientError.self) { try await app.client.sessionToken() }
        #expect(unconfigured?.code == .httpError && unconfigured?.status == 503)
        #expect(unconfigured?.serviceCode == "tokens_not_configured")

        let clock = app.clock
        for bad in [
            FakeService.Answer.token("not a token", clock.now + 300),
            .token("eyJh.eyJw.c2ln.extra", clock.now + 300),
            .token("eyJh.eyJw.c2ln", clock.now - 1),
            .status(201, nil),
        ] {
            app.service.answerTokens { _ in bad }
            let error = await #expect(throws: AttestKitClientError.self) { try await app.client.sessionToken() }
            #expect(error?.code == .invalidResponse)
        }
        // Nothing was cached by the failures: a good answer is asked for and used.
        app.service.answerTokens(Self.issuing(app))
        #expect(try await app.client.sessionToken().token.hasPrefix("eyJhbGciOiJFUzI1NiJ9."))

        let withoutManager = AttestKitHTTPClient(manager: nil, transport: app.service)
        let error = await #expect(throws: AttestKitClientError.self) { try await withoutManager.sessionToken() }
        #expect(error?.code == .unsupported)
    }

    @Test("a debug token replaces attestation and assertions only where enabled, and is sent to POST /v1/tokens")
    func debugToken() async throws {
        let debug = App(configuration: .init(debugToken: "ci-debug-token-0123", debugTokenOutsideSimulator: true))
        debug.service.answerTokens(Self.issuing(debug))
        #expect(try await debug.order() == .appAttest)
        _ = try await debug.client.sessionToken()
        let request = try #require(debug.service.requests.last)
        #expect(request.debugToken == "ci-debug-token-0123" && request.keyID == nil && !request.hasAssertion)
        let tokenRequest = try #require(debug.service.tokenRequests.last)
        #expect(tokenRequest.debugToken == "ci-debug-token-0123" && tokenRequest.keyID == nil)
        #expect(debug.provider.calls == .init())  // the device was never asked
        #expect(debug.service.challenges("attest") == 0 && debug.service.registrationAttempts.isEmpty)

        // Not a Simulator build and not enabled: the token is never sent, the device attests as usual.
        let device = App(configuration: .init(debugToken: "ci-debug-token-0123"))
        #expect(try await device.order() == .appAttest)
        let sent = try #require(device.service.requests.last)
        #expect(sent.debugToken == nil && sent.keyID != nil && sent.hasAssertion)
        #expect(device.provider.calls.attestKey == 1)
    }
}
