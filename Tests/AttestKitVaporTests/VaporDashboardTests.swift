import AttestKitFlows
import AttestKitStore
import AttestKitVapor
import Foundation
import NIOCore
import Prometheus
import Synchronization
import Testing
import Vapor
import VaporTesting

/// The operator dashboard on the Vapor edge, answering as the service's (the flows' one `Dashboard`): its credential
/// (the admin token, or a session cookie opened by logging in with it), the cookie's attributes and expiry, the
/// browser's redirect to the login form, the login's budgets, logout and its same-origin check, and the page read
/// from the integration's Prometheus registry.
@Suite("Vapor operator dashboard")
struct VaporDashboardTests {
    /// A clock the test moves.
    final class Clock: Sendable {
        private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var closure: @Sendable () -> Date { { self.now.withLock { $0 } } }
        func advance(by seconds: TimeInterval) { now.withLock { $0 += seconds } }
    }

    /// An application with the admin and backend tokens, its metrics in `registry`, which the dashboard reads.
    static func withDashboard(
        on kind: VaporStoreKind = .sqlite, clock: Clock = Clock(),
        registry: PrometheusCollectorRegistry? = PrometheusCollectorRegistry(),
        sessionLifetime: TimeInterval = 3_600, _ body: (Application) async throws -> Void
    ) async throws {
        try await VaporBench.withApplication(
            on: kind, configure: VaporRoutesTests.credentials,
            metrics: registry.map { FlowMetrics(factory: PrometheusMetricsFactory(registry: $0)) } ?? FlowMetrics(),
            now: clock.closure, prometheus: registry, dashboardSessionLifetime: sessionLifetime, body)
    }

    @Test("a session lifetime that is not a number given in code: sessions of the default hour, logins still open them")
    func nanSessionLifetime() async throws {
        try await Self.withDashboard(sessionLifetime: .nan) { app in
            let cookie = try await Self.login(app)
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": cookie]) {
                #expect($0.status == .ok)
            }
        }
    }

    static func form(_ token: String) -> (HTTPHeaders, ByteBuffer) {
        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return (["Content-Type": "application/x-www-form-urlencoded"], ByteBuffer(string: "token=\(encoded)"))
    }

    /// Logs in and returns the session cookie's `name=value`.
    static func login(_ app: Application) async throws -> String {
        let (headers, body) = form(VaporBench.adminToken)
        var pair = ""
        try await app.testing().test(.POST, "/dashboard/login", headers: headers, body: body) { response in
            #expect(response.status == .seeOther)
            #expect(response.headers.first(name: .location) == "../dashboard")
            let cookie = try #require(response.headers.first(name: .setCookie))
            for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Max-Age=3600"] {
                #expect(cookie.contains(attribute), "\(cookie)")
            }
            pair = String(try #require(cookie.split(separator: ";").first))
            #expect(pair.hasPrefix("attestkit_session="))
            #expect(pair.count >= "attestkit_session=".count + 43, "32 random bytes, Base64url")
        }
        return pair
    }

    @Test("without a credential: 401 for tools, 303 to the login form for browsers; a backend token opens nothing")
    func refused() async throws {
        try await Self.withDashboard { app in
            try await app.testing().test(.GET, "/dashboard") { response in
                #expect(response.status == .unauthorized && VaporBench.code(response) == "admin_unauthorized")
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Accept": "text/html"]) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers.first(name: .location) == "dashboard/login")
            }
            try await app.testing().test(.GET, "/dashboard", headers: VaporRoutesTests.bearer(VaporBench.backendToken)) {
                #expect($0.status == .unauthorized)
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": "attestkit_session=forged-value"]) {
                #expect($0.status == .unauthorized)
            }
        }
    }

    @Test(
        "a login opens a session whose cookie opens the dashboard until it expires; a wrong token is 401",
        arguments: await VaporStoreKind.available())
    func session(kind: VaporStoreKind) async throws {
        let clock = Clock()
        let registry = PrometheusCollectorRegistry()
        try await Self.withDashboard(on: kind, clock: clock, registry: registry) { app in
            try await app.testing().test(.GET, "/dashboard/login") { response in
                #expect(response.status == .ok)
                #expect(response.body.string.contains("name=\"token\""))
                #expect(response.headers.first(name: .contentSecurityPolicy)?.contains("default-src 'none'") == true)
            }
            for token in [VaporBench.adminToken + "x", VaporBench.backendToken] {
                let (headers, body) = Self.form(token)
                try await app.testing().test(.POST, "/dashboard/login", headers: headers, body: body) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers.first(name: .setCookie) == nil)
                    #expect(response.body.string.contains("That is not the admin token."))
                }
            }
            let cookie = try await Self.login(app)
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": "other=1; \(cookie)"]) { response in
                #expect(response.status == .ok)
                let page = response.body.string
                #expect(page.contains("AttestKit operations") && !page.lowercased().contains("<script"))
                #expect(page.contains(#"<form method="post" action="dashboard/logout">"#))
                #expect(response.headers.first(name: .cacheControl) == "no-store")
                #expect(response.headers.first(name: .contentType) == "text/html; charset=utf-8")
            }
            // The cookie opens the dashboard only, never an operator API route.
            try await app.testing().test(.GET, "/v1/keys/AAAA", headers: ["Cookie": cookie]) {
                #expect($0.status == .unauthorized)
            }
            let tampered = String(cookie.dropLast()) + (cookie.hasSuffix("A") ? "B" : "A")
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": tampered]) {
                #expect($0.status == .unauthorized)
            }
            let exposition = String(decoding: registry.emitToBuffer(), as: UTF8.self)
            #expect(exposition.contains(#"attestkit_dashboard_logins_total{result="ok"} 1"#), "\(exposition)")
            #expect(exposition.contains(#"attestkit_dashboard_logins_total{result="refused"} 2"#))
            #expect(exposition.contains(#"attestkit_auth_failures_total{audience="dashboard_login"} 2"#))
            clock.advance(by: 3_601)
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": cookie]) {
                #expect($0.status == .unauthorized, "expired")
            }
        }
    }

    @Test("logins are rate limited per client: the 11th in a minute is 429, right token or not")
    func loginRateLimit() async throws {
        try await Self.withDashboard { app in
            let (headers, body) = Self.form("wrong-token-wrong-token")
            for _ in 0..<10 {
                try await app.testing().test(.POST, "/dashboard/login", headers: headers, body: body) {
                    #expect($0.status == .unauthorized)
                }
            }
            let (right, rightBody) = Self.form(VaporBench.adminToken)
            try await app.testing().test(.POST, "/dashboard/login", headers: right, body: rightBody) { response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers.first(name: .setCookie) == nil)
                #expect(response.headers.first(name: "Retry-After") != nil)
            }
        }
    }

    @Test(
        "logout ends the session, clears the cookie and sends the browser to the login form",
        arguments: await VaporStoreKind.available())
    func logout(kind: VaporStoreKind) async throws {
        try await Self.withDashboard(on: kind) { app in
            let cookie = try await Self.login(app)
            let other = try await Self.login(app)
            try await app.testing().test(
                .POST, "/dashboard/logout",
                headers: ["Cookie": cookie, "Host": "attestkit.example:8443", "Origin": "https://attestkit.example:8443"]
            ) { response in
                #expect(response.status == .seeOther && response.headers.first(name: .location) == "login")
                let cleared = try #require(response.headers.first(name: .setCookie))
                #expect(cleared.hasPrefix("attestkit_session=;") && cleared.contains("Max-Age=0"), "\(cleared)")
                for attribute in ["HttpOnly", "Secure", "SameSite=Strict"] { #expect(cleared.contains(attribute)) }
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": cookie]) {
                #expect($0.status == .unauthorized)
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": cookie, "Accept": "text/html"]) {
                #expect($0.status == .seeOther && $0.headers.first(name: .location) == "dashboard/login")
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": other]) { #expect($0.status == .ok) }
            try await app.testing().test(
                .POST, "/dashboard/logout", headers: ["Cookie": cookie, "Accept": "text/html"]
            ) { #expect($0.status == .seeOther && $0.headers.first(name: .location) == "login") }
            try await app.testing().test(.POST, "/dashboard/logout") {
                #expect($0.status == .unauthorized && VaporBench.code($0) == "admin_unauthorized")
            }
        }
    }

    @Test(
        "a logout from another site is refused with 403 cross_site_request and ends nothing",
        arguments: [
            [("Sec-Fetch-Site", "cross-site")], [("Sec-Fetch-Site", "same-site")],
            [("Origin", "http://evil.example")], [("Origin", "null")], [("Origin", "https://attestkit.example:1")],
            [("Sec-Fetch-Site", "cross-site"), ("Origin", "https://attestkit.example:8443")],
        ])
    func crossSite(headers: [(String, String)]) async throws {
        try await Self.withDashboard { app in
            let cookie = try await Self.login(app)
            let sent = [("Cookie", cookie), ("Host", "attestkit.example:8443")] + headers
            try await app.testing().test(.POST, "/dashboard/logout", headers: HTTPHeaders(sent)) { response in
                #expect(response.status == .forbidden && VaporBench.code(response) == "cross_site_request", "\(headers)")
                #expect(response.headers.first(name: .setCookie) == nil)
            }
            try await app.testing().test(.GET, "/dashboard", headers: ["Cookie": cookie]) { #expect($0.status == .ok) }
            try await app.testing().test(
                .POST, "/dashboard/logout", headers: ["Cookie": cookie, "Sec-Fetch-Site": "same-origin"]
            ) { #expect($0.status == .seeOther) }
        }
    }

    @Test("a login from another site is refused with 403 cross_site_request; from the dashboard's own page it opens")
    func crossSiteLogin() async throws {
        try await Self.withDashboard { app in
            var (headers, body) = Self.form(VaporBench.adminToken)
            headers.add(name: "Sec-Fetch-Site", value: "cross-site")
            try await app.testing().test(.POST, "/dashboard/login", headers: headers, body: body) { response in
                #expect(response.status == .forbidden && VaporBench.code(response) == "cross_site_request")
                #expect(response.headers.first(name: .setCookie) == nil)
            }
            headers.replaceOrAdd(name: "Sec-Fetch-Site", value: "same-origin")
            try await app.testing().test(.POST, "/dashboard/login", headers: headers, body: body) { response in
                #expect(response.status == .seeOther)
            }
        }
    }

    @Test("without a Prometheus registry the page is 503 metrics_not_configured; the login still works")
    func withoutRegistry() async throws {
        try await Self.withDashboard(registry: nil) { app in
            try await app.testing().test(.GET, "/dashboard", headers: VaporRoutesTests.bearer(VaporBench.adminToken)) {
                #expect($0.status == .serviceUnavailable && VaporBench.code($0) == "metrics_not_configured")
            }
            _ = try await Self.login(app)
        }
    }

    @Test("mounted under a prefix, only the dashboard's audiences: the redirects stay relative")
    func mountedUnderPrefix() async throws {
        var configuration = VaporBench.configuration(policy: nil, deployment: DeploymentPolicy())
        VaporRoutesTests.credentials(&configuration)
        let application = try AttestKitApplication(configuration: configuration, store: MemoryAttestationStore())
        try await withApp(configure: { app in
            app.logger.logLevel = .critical
            let registry = PrometheusCollectorRegistry()
            app.attestKit = try AttestKitIntegration(application, exposition: { registry.emitToBuffer() })
            try app.grouped("ops").register(collection: AttestKitRoutes(audiences: [.dashboard, .dashboardLogin]))
        }) { app in
            #expect(app.routes.all.count == 4)
            try await app.testing().test(.GET, "/ops/dashboard", headers: ["Accept": "text/html"]) {
                #expect($0.status == .seeOther && $0.headers.first(name: .location) == "dashboard/login")
            }
            let (headers, body) = Self.form(VaporBench.adminToken)
            try await app.testing().test(.POST, "/ops/dashboard/login", headers: headers, body: body) {
                #expect($0.status == .seeOther && $0.headers.first(name: .location) == "../dashboard")
            }
        }
    }
}
