import Foundation
import NIOHTTP1
import Testing

/// Logging out of the dashboard: the session ends, the cookie is cleared, and only a request from the dashboard's own
/// origin may do it; a session is bound to the admin token it was opened under.
@Suite("Operator dashboard: logout")
struct DashboardLogoutTests {
    /// Logs in over HTTP and returns the session cookie's `name=value`.
    static func login(_ harness: ServerHarness) async throws -> String {
        let answer = try await harness.send(.POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8))
        #expect(answer.status == 303, "\(answer)")
        let cookie = try #require(answer.header("Set-Cookie"))
        return String(try #require(cookie.split(separator: ";").first))
    }

    @Test("logout ends the session, clears the cookie and sends the browser to the login form", arguments: await StoreKind.all())
    func logout(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let cookie = try await Self.login(harness)
            let page = try await harness.get("/dashboard", headers: [("Cookie", cookie)])
            #expect(page.status == 200)
            #expect(page.text.contains(#"<form method="post" action="dashboard/logout">"#))
            let other = try await Self.login(harness)
            let answer = try await harness.send(
                .POST, "/dashboard/logout", headers: [("Cookie", cookie), ("Origin", harness.apiURL)])
            #expect(answer.status == 303 && answer.header("Location") == "login", "\(answer)")
            let cleared = try #require(answer.header("Set-Cookie"))
            #expect(cleared.hasPrefix("attestkit_session=;") && cleared.contains("Max-Age=0"), "\(cleared)")
            for attribute in ["HttpOnly", "Secure", "SameSite=Strict"] { #expect(cleared.contains(attribute)) }
            // The session is gone on the server, whatever the browser keeps; another session lives on.
            let after = try await harness.get("/dashboard", headers: [("Cookie", cookie)])
            #expect(after.status == 401, "\(after)")
            let browser = try await harness.get("/dashboard", headers: [("Cookie", cookie), ("Accept", "text/html")])
            #expect(browser.status == 303 && browser.header("Location") == "dashboard/login")
            #expect(try await harness.get("/dashboard", headers: [("Cookie", other)]).status == 200)
            // Without a session: the browser goes to the login form (relative to /dashboard/logout), a tool gets 401.
            let again = try await harness.send(
                .POST, "/dashboard/logout", headers: [("Cookie", cookie), ("Accept", "text/html")])
            #expect(again.status == 303 && again.header("Location") == "login", "\(again)")
            let tool = try await harness.send(.POST, "/dashboard/logout")
            #expect(tool.status == 401 && tool.errorCode == "admin_unauthorized", "\(tool)")
        }
    }

    @Test(
        "a logout from another site is refused with 403 cross_site_request and ends nothing",
        arguments: [
            [("Sec-Fetch-Site", "cross-site")], [("Sec-Fetch-Site", "same-site")],
            [("Origin", "http://evil.example")], [("Origin", "null")], [("Origin", "http://127.0.0.1:1")],
            [("Origin", "OTHER-PORT")], [("Sec-Fetch-Site", "cross-site"), ("Origin", "SAME")],
        ])
    func crossSite(headers: [(String, String)]) async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let cookie = try await Self.login(harness)
            // SAME: the dashboard's own origin; OTHER-PORT: its host on another port.
            var otherPort = try #require(URLComponents(string: harness.apiURL))
            otherPort.port = 1
            let sent = try headers.map { name, value in
                switch value {
                case "SAME": (name, harness.apiURL)
                case "OTHER-PORT": (name, try #require(otherPort.string))
                default: (name, value)
                }
            }
            let answer = try await harness.send(.POST, "/dashboard/logout", headers: [("Cookie", cookie)] + sent)
            #expect(answer.status == 403 && answer.errorCode == "cross_site_request", "\(headers): \(answer)")
            #expect(answer.header("Set-Cookie") == nil)
            #expect(try await harness.get("/dashboard", headers: [("Cookie", cookie)]).status == 200)
            // The same request from the dashboard's own page is let through.
            let own = try await harness.send(
                .POST, "/dashboard/logout", headers: [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")])
            #expect(own.status == 303)
        }
    }

    @Test("a login from another site is refused with 403 cross_site_request before it spends the address's budget")
    func crossSiteLogin() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            // A page the operator visits posts wrong tokens (a no-cors form post: no preflight): each is refused
            // before it counts, so the operator's own requests are not rate limited afterwards.
            for _ in 0..<12 {
                let answer = try await harness.send(
                    .POST, "/dashboard/login", body: Array("token=wrong".utf8),
                    headers: [("Sec-Fetch-Site", "cross-site")])
                #expect(answer.status == 403 && answer.errorCode == "cross_site_request", "\(answer)")
                #expect(answer.header("Set-Cookie") == nil)
            }
            let metrics = try await harness.get(
                "/metrics", headers: [("Authorization", "Bearer \(Fixture.adminToken)")])
            #expect(metrics.status == 200, "\(metrics)")
            // The login form on the dashboard's own page, and a tool without browser headers, log in.
            let own = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8),
                headers: [("Sec-Fetch-Site", "same-origin")])
            #expect(own.status == 303, "\(own)")
            _ = try await Self.login(harness)
        }
    }

    /// The `Origin` a browser following the Fetch standard ("append a request `Origin` header") sends with a form
    /// post from a page of `pageOrigin` served with `policy` to `target`, a page of the same origin: `null` under
    /// `no-referrer`, under `same-origin` for another origin, and under the `strict-origin` policies from an `https`
    /// page to an `http` one; the page's origin otherwise.
    static func browserOrigin(policy: String, pageOrigin: String, target: String) -> String {
        let sameOrigin = pageOrigin == target
        let downgrade = pageOrigin.hasPrefix("https:") && !target.hasPrefix("https:")
        switch policy.lowercased() {
        case "no-referrer": return "null"
        case "same-origin": return sameOrigin ? pageOrigin : "null"
        case "no-referrer-when-downgrade", "strict-origin", "strict-origin-when-cross-origin":
            return downgrade ? "null" : pageOrigin
        default: return pageOrigin
        }
    }

    @Test("a browser without Sec-Fetch-Site signs in and out from the dashboard's own pages, under their Referrer-Policy")
    func ownPagesWithoutFetchMetadata() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let form = try await harness.get("/dashboard/login")
            let policy = try #require(form.header("Referrer-Policy"), "\(form)")
            let origin = Self.browserOrigin(policy: policy, pageOrigin: harness.apiURL, target: harness.apiURL)
            let login = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8),
                headers: [("Origin", origin)])
            #expect(login.status == 303, "Referrer-Policy \(policy): \(login)")
            let cookie = try #require(login.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
            let page = try await harness.get("/dashboard", headers: [("Cookie", cookie)])
            let pagePolicy = try #require(page.header("Referrer-Policy"), "\(page)")
            let logout = try await harness.send(
                .POST, "/dashboard/logout",
                headers: [
                    ("Cookie", cookie),
                    ("Origin", Self.browserOrigin(policy: pagePolicy, pageOrigin: harness.apiURL, target: harness.apiURL)),
                ])
            #expect(logout.status == 303, "Referrer-Policy \(pagePolicy): \(logout)")
            // A page of another site still sends `null` (or its own origin) and is refused.
            let foreign = Self.browserOrigin(policy: policy, pageOrigin: "http://evil.example", target: harness.apiURL)
            let refused = try await harness.send(
                .POST, "/dashboard/login", body: Array("token=\(Fixture.adminToken)".utf8),
                headers: [("Origin", foreign)])
            #expect(refused.status == 403 && refused.errorCode == "cross_site_request", "\(refused)")
        }
    }
}
