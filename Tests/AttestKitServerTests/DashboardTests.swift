import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The operator dashboard: its credential (the admin token, or a session cookie opened by logging in with it), the
/// session's cookie attributes, expiry and the login's rate limit, and the numbers after real traffic. The page in
/// a real browser is tested by scripts/dashboard-check (headless Chromium).
@Suite("Operator dashboard")
struct DashboardTests {
    static func server(clock: TestClock = TestClock()) throws -> AttestKitServer {
        let configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
            trustAnchors: Fixture.apple.trustAnchors, adminToken: Fixture.adminToken,
            backendTokens: [Fixture.backendToken], logLevel: .critical)
        return try AttestKitServer(
            configuration: configuration, store: MemoryAttestationStore(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), now: clock.closure)
    }

    static func form(_ token: String) -> (HTTPFields, ByteBuffer) {
        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return ([.contentType: "application/x-www-form-urlencoded"], ByteBuffer(string: "token=\(encoded)"))
    }

    /// Logs in and returns the session cookie's `name=value`.
    static func login(_ client: any TestClientProtocol) async throws -> String {
        let (headers, body) = form(Fixture.adminToken)
        return try await client.execute(uri: "/dashboard/login", method: .post, headers: headers, body: body) {
            response in
            #expect(response.status == .seeOther)
            #expect(response.headers[.location] == "../dashboard")
            let cookie = try #require(response.headers[.setCookie])
            for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Max-Age=3600"] {
                #expect(cookie.contains(attribute), "\(cookie)")
            }
            let pair = try #require(cookie.split(separator: ";").first)
            #expect(pair.hasPrefix("attestkit_session="))
            #expect(pair.count >= "attestkit_session=".count + 43, "32 random bytes, Base64url")
            return String(pair)
        }
    }

    @Test("without a credential: 401 for tools, 303 to the login form for browsers; a backend token opens nothing")
    func refused() async throws {
        let app = Application(router: try Self.server().buildRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/dashboard", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(RouterTests.code(response) == "admin_unauthorized")
            }
            try await client.execute(uri: "/dashboard", method: .get, headers: [.accept: "text/html"]) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "dashboard/login")
            }
            try await client.execute(
                uri: "/dashboard", method: .get, headers: RouterTests.bearer(Fixture.backendToken)
            ) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(
                uri: "/dashboard", method: .get, headers: [.cookie: "attestkit_session=forged-value"]
            ) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test("the admin bearer token opens the dashboard; the page loads nothing from elsewhere and runs no script")
    func bearer() async throws {
        let app = Application(router: try Self.server().buildRouter())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/dashboard", method: .get, headers: RouterTests.bearer(Fixture.adminToken)
            ) { response in
                #expect(response.status == .ok)
                let page = String(buffer: response.body)
                #expect(page.contains("AttestKit operations"))
                #expect(!page.lowercased().contains("<script"))
                #expect(!page.contains("src="))
                #expect(!page.contains("http://") && !page.contains("https://"))
                #expect(response.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
                #expect(response.headers[.cacheControl] == "no-store")
            }
        }
    }

    @Test("a login opens a session whose cookie opens the dashboard until it expires; a wrong token is 401")
    func session() async throws {
        let clock = TestClock()
        let app = Application(router: try Self.server(clock: clock).buildRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/dashboard/login", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("name=\"token\""))
            }
            let (headers, body) = Self.form(Fixture.adminToken + "x")
            try await client.execute(uri: "/dashboard/login", method: .post, headers: headers, body: body) {
                response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.setCookie] == nil)
            }
            let (backend, backendBody) = Self.form(Fixture.backendToken)
            try await client.execute(uri: "/dashboard/login", method: .post, headers: backend, body: backendBody) {
                response in
                #expect(response.status == .unauthorized)
            }
            let cookie = try await Self.login(client)
            try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: "other=1; \(cookie)"]) {
                response in
                #expect(response.status == .ok)
            }
            // The cookie opens the dashboard only, never an operator API route.
            try await client.execute(uri: "/v1/keys/AAAA", method: .get, headers: [.cookie: cookie]) { response in
                #expect(response.status == .unauthorized)
            }
            // A changed character is another session.
            let tampered = String(cookie.dropLast()) + (cookie.hasSuffix("A") ? "B" : "A")
            try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: tampered]) { response in
                #expect(response.status == .unauthorized)
            }
            clock.advance(by: 3_601)
            try await client.execute(uri: "/dashboard", method: .get, headers: [.cookie: cookie]) { response in
                #expect(response.status == .unauthorized, "expired")
            }
        }
    }

    @Test("logins are rate limited per client: the 11th in a minute is 429, right token or not")
    func loginRateLimit() async throws {
        let app = Application(router: try Self.server().buildRouter())
        try await app.test(.router) { client in
            let (headers, body) = Self.form("wrong-token-wrong-token")
            for _ in 0..<10 {
                try await client.execute(uri: "/dashboard/login", method: .post, headers: headers, body: body) {
                    response in
                    #expect(response.status == .unauthorized)
                }
            }
            let (right, rightBody) = Self.form(Fixture.adminToken)
            try await client.execute(uri: "/dashboard/login", method: .post, headers: right, body: rightBody) {
                response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[.setCookie] == nil)
            }
        }
    }

    @Test("after real traffic the dashboard shows the numbers, and /metrics has HELP text and its alert series")
    func numbers() async throws {
        let clock = TestClock()
        let server = try Self.server(clock: clock)
        let app = Application(router: server.buildRouter())
        try await app.test(.router) { client in
            let fresh = String(decoding: server.metrics.exposition(), as: UTF8.self)
            #expect(fresh.contains("# HELP attestkit_verifications_total "))
            #expect(fresh.contains("# HELP attestkit_storage_up "))
            #expect(fresh.contains("attestkit_storage_errors_total 0"))
            #expect(fresh.contains("attestkit_trust_anchor_expiry_timestamp_seconds{anchor=\"attestation\"}"))
            #expect(fresh.contains("code=\"counter_not_increasing\""))
            _ = try await RouterTests.registeredDevice(client, at: clock.now())
            try await client.execute(uri: "/v1/attestations", method: .post, body: RouterTests.json("{}")) { _ in }
            try await client.execute(uri: "/v1/challenges", method: .get) { response in
                #expect(response.status == .methodNotAllowed)
            }
            try await client.execute(
                uri: "/dashboard", method: .get, headers: RouterTests.bearer(Fixture.adminToken)
            ) { response in
                let page = String(buffer: response.body)
                #expect(page.contains("attestation · accepted</td><td class=\"n\">1</td>"), "\(page)")
                #expect(page.contains("development · active</td><td class=\"n\">1</td>"))
                #expect(page.contains("development · none</td><td class=\"n\">1</td>"), "keys by validation category")
                #expect(page.contains("POST /v1/challenges"))
            }
            let metrics = String(decoding: server.metrics.exposition(), as: UTF8.self)
            #expect(metrics.contains("# HELP attestkit_http_request_duration_seconds "))
            #expect(metrics.contains("attestkit_http_request_duration_seconds_count{route=\"/v1/challenges\",method=\"POST\"}"))
            #expect(metrics.contains("attestkit_http_requests_total{route=\"/v1/challenges\",method=\"GET\",status=\"405\"} 1"))
            #expect(!metrics.contains("# HELP attestkit_keys AttestKit metric"), "every metric has its own text")
        }
    }
}
