import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitTestSupport
import Foundation
import Logging
import NIOHTTP1
import Testing

/// Wrong credentials are not free: every credentialed route (backend, operator, monitoring, dashboard and its login
/// form) spends one per-client failure budget (`rate-limit.auth-failures-per-ip`); once it is spent, the client's
/// credentials are refused with 429 before they are compared, so a right guess is not told from a wrong one.
@Suite("Credential failure budget")
struct CredentialBudgetTests {
    static func options(budget: Int, logger: Logger = ServerHarness.silent) -> ServerHarness.Options {
        var options = ServerHarness.Options()
        options.rateLimits.authFailuresPerIP = budget
        options.sendsBackendToken = false
        options.logger = logger
        return options
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    static let wrong = "wrong-token-0123456789-wrong"

    @Test(
        "wrong admin and backend bearers share one budget: then 429 with Retry-After, even for the right token",
        arguments: await StoreKind.all())
    func budgetSpent(kind: StoreKind) async throws {
        let capture = LogCapture()
        var options = Self.options(budget: 6, logger: capture.logger())
        options.transport = .live  // the refusals are logged with the peer's address
        try await ServerHarness.with(kind, options) { harness in
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong)).status)
                statuses.append(
                    try await harness.post("/v1/devicecheck/query", .object([]), headers: Self.bearer(Self.wrong))
                        .status)
            }
            #expect(statuses == [401, 401, 401, 401, 401, 401])
            // Spent: every credential of this client is refused unread, the right ones too, on every audience.
            for (path, token) in [
                ("/v1/keys/AAAA", Fixture.adminToken), ("/metrics", Fixture.backendToken),
                ("/dashboard", Fixture.adminToken),
            ] {
                let refused = try await harness.get(path, headers: Self.bearer(token))
                #expect(refused.status == 429 && refused.errorCode == "rate_limited", "\(path): \(refused)")
                #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 1, "\(refused.headers)")
            }
            let login = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8))
            #expect(login.status == 429 && login.header("Set-Cookie") == nil, "\(login)")
            // A refill of the bucket opens the right token again.
            harness.clock.advance(by: 61)
            let metrics = try await harness.get("/metrics", headers: Self.bearer(Fixture.adminToken))
            #expect(metrics.status == 200)
            #expect(metrics.text.contains(#"attestkit_auth_failures_total{audience="operator"} 3"#))
            #expect(metrics.text.contains(#"attestkit_auth_failures_total{audience="backend"} 3"#))
            #expect(metrics.text.contains(#"attestkit_rate_limited_total{limit="auth_failures_per_ip"} 4"#))
        }
        // Each refusal is logged with the client's address, never with the credential.
        let refusals = capture.logged.filter { $0.message.hasPrefix("credential refused") }
        #expect(refusals.count == 10)
        #expect(refusals.allSatisfy { $0.metadata["client"] == "127.0.0.1" })
        for line in capture.logged {
            let text = line.message + line.metadata.values.joined()
            #expect(!text.contains(Self.wrong) && !text.contains(Fixture.adminToken) && !text.contains("Bearer"))
        }
    }

    @Test("right credentials spend nothing, and a request without one guesses nothing", arguments: await StoreKind.all())
    func rightCredentialsAreFree(kind: StoreKind) async throws {
        try await ServerHarness.with(kind, Self.options(budget: 2)) { harness in
            for _ in 0..<20 {
                let read = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Fixture.adminToken))
                #expect(![401, 429].contains(read.status), "\(read)")
                let metrics = try await harness.get("/metrics", headers: Self.bearer(Fixture.backendToken))
                #expect(metrics.status == 200)
                let bare = try await harness.get("/v1/keys/AAAA")
                #expect(bare.status == 401)
            }
            let first = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong))
            let second = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong))
            let third = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong))
            let statuses: [Int] = [first.status, second.status, third.status]
            #expect(statuses == [401, 401, 429])
        }
    }

    @Test("wrong dashboard logins and wrong session cookies spend the same budget as bearers")
    func dashboardShareTheBudget() async throws {
        try await ServerHarness.with(.sqlite, Self.options(budget: 3)) { harness in
            let login = try await harness.send(.POST, "/dashboard/login", body: Array("token=\(Self.wrong)".utf8))
            #expect(login.status == 401)
            let cookie = try await harness.get("/dashboard", headers: [("Cookie", "attestkit_session=forged")])
            #expect(cookie.status == 401)
            let bearer = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong))
            #expect(bearer.status == 401)
            let spent = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8))
            #expect(spent.status == 429 && spent.errorCode == "rate_limited", "\(spent)")
            let metrics = try await harness.get("/metrics", headers: Self.bearer(Fixture.backendToken))
            #expect(metrics.status == 429)
        }
    }

    @Test("0 turns the budget off")
    func off() async throws {
        try await ServerHarness.with(.sqlite, Self.options(budget: 0)) { harness in
            for _ in 0..<30 {
                let answer = try await harness.get("/v1/keys/AAAA", headers: Self.bearer(Self.wrong))
                #expect(answer.status == 401)
            }
        }
    }
}
