import AttestKitStore
import CoreMetrics
package import Foundation
package import Logging

/// The operator dashboard over one ``AttestKitApplication``, written once for every edge: its browser sessions
/// (``DashboardSessions``), its history of samples (``DashboardHistory``), the per-address login budget
/// (`rate-limit.dashboard-logins-per-ip`) and its answers (``DashboardResponse``). An edge reads the request's few
/// fields (the `Cookie`, `Accept`, `Sec-Fetch-Site`, `Origin` and `Host` headers, the client's address, the body)
/// and copies the answer into its own response; the errors it throws are ``FlowError``s, answered as every other.
///
/// - `GET /dashboard` (the admin token or a session): the page, from the Prometheus exposition the edge gives.
/// - `GET /dashboard/login`: the login form.
/// - `POST /dashboard/login` (form `token=<admin token>`): a session cookie (HttpOnly, Secure, SameSite=Strict,
///   expiring) and a redirect to the dashboard, or the form again with 401. Rate limited per client address, and a
///   wrong token spends the client's credential failure budget (429 before the token is read once spent).
/// - `POST /dashboard/logout` (the admin token or a session): closes the session the cookie names, clears the cookie
///   and sends the browser to the login form; same-origin only (403 `cross_site_request`).
package final class Dashboard: Sendable {
    /// The decisions: the credentials, the failure budget, the store, the clock.
    package let application: AttestKitApplication
    /// The browser sessions, each bound to the admin token that opened it.
    package let sessions: DashboardSessions
    /// The samples of earlier views, for rates.
    package let history = DashboardHistory()
    /// Dashboard logins per client address.
    private let loginsPerIP: RateLimiter

    /// The dashboard of `application`, its sessions living `sessionLifetime` seconds.
    package init(application: AttestKitApplication, sessionLifetime: TimeInterval) {
        self.application = application
        self.sessions = DashboardSessions(
            lifetime: sessionLifetime, adminToken: application.credentials.adminToken ?? [],
            previousAdminTokens: application.credentials.adminPreviousTokens, store: application.store)
        self.loginsPerIP = RateLimiter(perMinute: application.configuration.rateLimits.dashboardLoginsPerIP)
    }

    /// Checks a request's credential for `audience` (``AttestKitApplication/authorize(_:authorization:session:client:)``,
    /// with the session cookie's liveness for the dashboard, read from the store); a browser (`Accept` names
    /// `text/html`) without a dashboard session is sent to the login form `loginForm` (the redirect returned), tools
    /// get the 401. When the store cannot tell whether the session is live, the request is refused (503
    /// `storage_unavailable`, counted and logged as every storage failure), never let in.
    package func authorize(
        _ audience: RouteAudience, authorization: [String], cookies: @autoclosure () -> [String],
        accept: @autoclosure () -> [String], client: @autoclosure () -> String, loginForm: String
    ) async throws(FlowError) -> DashboardResponse? {
        guard audience == .dashboard else {
            try application.authorize(audience, authorization: authorization, client: client())
            return nil
        }
        var session: Bool?
        if let cookie = DashboardSessions.cookie(in: cookies()) {
            if application.authFailuresPerClient.exhaustion(client(), now: application.now()) != nil {
                // A client whose budget of wrong credentials is spent is refused (429) whatever it presents: its
                // cookie is not looked up, so that guessing cookies costs the store nothing once the budget is spent.
                session = false
            } else {
                do {
                    session = try await sessions.isValid(cookie, now: application.now())
                } catch {
                    throw application.failure(error)
                }
            }
        }
        do {
            try application.authorize(audience, authorization: authorization, session: session, client: client())
            return nil
        } catch {
            guard error.kind == .unauthenticated, accept().contains(where: { $0.lowercased().contains("text/html") })
            else { throw error }
            return .redirect(to: loginForm)
        }
    }

    /// `GET /dashboard`: the page of `exposition` (the Prometheus text of the application's metrics) and the store's
    /// key counts, read once, for the key gauges and the page alike.
    package func page(exposition: () -> String) async -> DashboardResponse {
        let counts = await application.refreshGauges()
        let samples = MetricSample.parse(exposition())
        let now = application.now()
        let previous = history.record(samples, now: now)
        return .html(200, DashboardPage(samples: samples, previous: previous, keyCounts: counts, now: now).html)
    }

    /// `GET /dashboard/login`: the login form; 503 `admin_not_configured` without an admin token.
    package func loginForm() throws(FlowError) -> DashboardResponse {
        guard application.credentials.adminToken != nil else { throw FlowError.adminNotConfigured }
        return .html(200, DashboardPage.login(message: nil))
    }

    /// `POST /dashboard/login`: refuses a request from another site (``isSameOrigin(fetchSite:origins:authority:)``)
    /// with 403 `cross_site_request` before anything is counted (a page the operator visits could otherwise post
    /// wrong tokens and spend the operator's credential failure budget), else checks the form's admin token (the
    /// body, at most 4 KiB, read by `body` once the budgets allow), opens a session and redirects to `dashboard` (a
    /// reference relative to the login's path).
    package func login(
        client: String, logger: Logger, dashboard: String = "../dashboard",
        fetchSite: [String] = [], origins: [String] = [], authority: String? = nil,
        body: (_ limit: Int) async throws -> [UInt8]
    ) async throws -> DashboardResponse {
        guard application.credentials.adminToken != nil else { throw FlowError.adminNotConfigured }
        guard Self.isSameOrigin(fetchSite: fetchSite, origins: origins, authority: authority) else {
            throw FlowError.crossSiteRequest
        }
        if let wait = loginsPerIP.acquire(client, now: application.now()) {
            count("rate_limited")
            application.metrics.rateLimited("dashboard_logins_per_ip")
            throw FlowError.rateLimited("dashboard_logins_per_ip", retryAfter: wait)
        }
        do {
            try application.reserveAuthFailure(client, audience: "dashboard_login")
        } catch {
            count("rate_limited")
            throw error
        }
        let form: [UInt8]
        do {
            form = try await body(4_096)
        } catch {
            application.refundAuthFailure(client)
            throw error
        }
        let token = Self.formValue("token", in: String(decoding: form, as: UTF8.self))
        guard let token, application.isAdminToken(token) == true else {
            count("refused")
            application.authFailed(client, audience: "dashboard_login")
            return .html(401, DashboardPage.login(message: "That is not the admin token."))
        }
        application.refundAuthFailure(client)
        let session: String
        do {
            session = try await sessions.open(now: application.now(), token: Array(token.utf8))
        } catch {
            throw application.failure(error)
        }
        count("ok")
        logger.notice("dashboard login", metadata: ["client": "\(client)"])
        return DashboardResponse.redirect(to: dashboard).settingCookie(session, maxAge: Int(sessions.lifetime))
    }

    /// `POST /dashboard/logout`: refuses a request from another site (``isSameOrigin(fetchSite:origins:authority:)``)
    /// with 403 `cross_site_request`, else closes the session the cookie names (deletes it from the store, so it ends
    /// on every replica), clears the cookie and redirects to `loginForm` (a reference relative to the logout's path).
    /// A store that fails to delete it answers 503 `storage_unavailable`: the session may still be open.
    package func logout(
        cookies: [String], fetchSite: [String], origins: [String], authority: String?, client: String, logger: Logger,
        loginForm: String = "login"
    ) async throws(FlowError) -> DashboardResponse {
        guard Self.isSameOrigin(fetchSite: fetchSite, origins: origins, authority: authority) else {
            throw FlowError.crossSiteRequest
        }
        if let cookie = DashboardSessions.cookie(in: cookies) {
            do {
                try await sessions.close(cookie)
            } catch {
                throw application.failure(error)
            }
        }
        logger.notice("dashboard logout", metadata: ["client": "\(client)"])
        return DashboardResponse.redirect(to: loginForm).settingCookie("", maxAge: 0)
    }

    /// Counts a login: `ok`, `refused` or `rate_limited` (`attestkit_dashboard_logins_total`).
    private func count(_ result: String) {
        Counter(
            label: "attestkit_dashboard_logins_total", dimensions: [("result", result)],
            factory: application.metrics.factory
        ).increment()
    }

    /// Whether a browser sent the request from this site. `Sec-Fetch-Site` (`fetchSite`, its values) decides when
    /// present (`same-origin`, or `none`: typed or bookmarked); otherwise the one `Origin` must name the request's
    /// `authority` (host and port); a request with neither comes from a tool, not from a page of another site.
    package static func isSameOrigin(fetchSite: [String], origins: [String], authority: String?) -> Bool {
        if !fetchSite.isEmpty {
            return fetchSite.count == 1 && ["same-origin", "none"].contains(fetchSite[0].lowercased())
        }
        guard !origins.isEmpty else { return true }
        guard origins.count == 1, let origin = URLComponents(string: origins[0]),
            let scheme = origin.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let originHost = origin.host, !originHost.isEmpty,
            let authority, let host = URLComponents(string: "\(scheme)://\(authority)"), let requestHost = host.host
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        return originHost.lowercased() == requestHost.lowercased()
            && (origin.port ?? defaultPort) == (host.port ?? defaultPort)
    }

    /// The value of the one field `name` of a URL-encoded form, or `nil` (absent, repeated, or not decodable).
    package static func formValue(_ name: String, in form: String) -> String? {
        var found: [String] = []
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            guard let value = parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                return nil
            }
            found.append(value)
        }
        return found.count == 1 ? found[0] : nil
    }

    /// The redirect of a browser's request for a dashboard page spelled with trailing slashes (`/dashboard/`, which
    /// both frameworks route as `/dashboard`) to the page's own spelling. The page's relative references (the login
    /// redirect, its forms) resolve against the spelling the browser used: under `/dashboard/` they would name
    /// `/dashboard/dashboard/login`. The redirect is relative too (`../dashboard`), so it holds wherever the routes are
    /// mounted.
    ///
    /// - Parameters:
    ///   - method: The route's method; only `GET` pages are redirected.
    ///   - routePath: The route's path in the table (`/dashboard`, `/dashboard/login`).
    ///   - requestPath: The path the request was sent to, as sent.
    /// - Returns: `nil` for any other route or a request spelled as the route is.
    package static func ownSpelling(method: String, routePath: String, requestPath: String) -> DashboardResponse? {
        guard method == "GET", routePath == "/dashboard" || routePath.hasPrefix("/dashboard/"),
            let page = routePath.split(separator: "/").last
        else { return nil }
        let slashes = requestPath.reversed().prefix { $0 == "/" }.count
        guard slashes > 0, slashes < requestPath.count else { return nil }
        return .redirect(to: String(repeating: "../", count: slashes) + page)
    }

    /// The reference relative to the route `path` that names `target` (both absolute route paths), so that a
    /// redirect holds wherever the routes are mounted: `/dashboard/login` from `/dashboard` is `dashboard/login`,
    /// from `/dashboard/logout` it is `login`.
    package static func relativeReference(to target: String, from path: String) -> String {
        let directory = path.split(separator: "/").dropLast()
        var remaining = target.split(separator: "/")[...]
        for segment in directory {
            guard remaining.first == segment else { break }
            remaining = remaining.dropFirst()
        }
        return remaining.joined(separator: "/")
    }
}

extension FlowError {
    /// 403 `cross_site_request`: a state change of the dashboard sent from another site.
    package static var crossSiteRequest: FlowError {
        FlowError(
            .init("cross_site_request"), .refused,
            "the request comes from another site; log out from the dashboard itself"
        )
    }
}
