import AttestKit
import AttestKitFlows
import AttestKitStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension AttestKitAPI {
    /// `GET /dashboard` (operator: the admin token or a session): the operator dashboard.
    func dashboard(_: Request, _: RouteContext) async throws -> Response {
        await application.refreshGauges()
        let counts = try? await store.keyCounts()
        let samples = MetricSample.parse(String(decoding: metrics.exposition(), as: UTF8.self))
        let time = now()
        let previous = dashboardHistory.record(samples, now: time)
        let page = DashboardPage(samples: samples, previous: previous, keyCounts: counts, now: time)
        return Self.html(.ok, page.html)
    }

    /// `GET /dashboard/login`: the login form.
    func dashboardLoginForm(_: Request, _: RouteContext) async throws -> Response {
        guard configuration.adminToken != nil else { throw FlowError.adminNotConfigured }
        return Self.html(.ok, DashboardPage.login(message: nil))
    }

    /// `POST /dashboard/login` (form `token=<admin token>`): a session cookie (HttpOnly, SameSite=Strict, Secure,
    /// expiring) and a redirect to the dashboard, or the form again with 401. Rate limited per client address, and
    /// a wrong token spends the client's credential failure budget (429 before the token is read once spent).
    func dashboardLogin(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard configuration.adminToken != nil else { throw FlowError.adminNotConfigured }
        let client = clientKey(request, context)
        if let wait = dashboardLoginsPerIP.acquire(client, now: now()) {
            metrics.dashboardLogin("rate_limited")
            metrics.flows.rateLimited("dashboard_logins_per_ip")
            throw FlowError.rateLimited("dashboard_logins_per_ip", retryAfter: wait)
        }
        do {
            try application.reserveAuthFailure(client, audience: "dashboard_login")
        } catch {
            metrics.dashboardLogin("rate_limited")
            throw error
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: 4_096)
        } catch {
            application.refundAuthFailure(client)
            throw error
        }
        let token = Self.formValue("token", in: String(decoding: body.readableBytesView, as: UTF8.self))
        guard let token, application.isAdminToken(token) == true else {
            metrics.dashboardLogin("refused")
            application.authFailed(client, audience: "dashboard_login")
            return Self.html(.unauthorized, DashboardPage.login(message: "That is not the admin token."))
        }
        application.refundAuthFailure(client)
        metrics.dashboardLogin("ok")
        context.logger.notice("dashboard login", metadata: ["client": "\(client)"])
        let session = sessions.open(now: now())
        var response = Self.redirect(to: "../dashboard")
        response.headers[.setCookie] =
            "\(DashboardSessions.cookieName)=\(session); Max-Age=\(Int(sessions.lifetime)); "
            + "HttpOnly; Secure; SameSite=Strict"
        return response
    }

    /// `POST /dashboard/logout` (the admin token or a session): closes the session the cookie names, clears the
    /// cookie and sends the browser to the login form. Same-origin only: a request a browser marks as sent from
    /// another site (`Sec-Fetch-Site`), or whose `Origin` is not this host, is refused with 403
    /// `cross_site_request` and ends nothing.
    func dashboardLogout(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard Self.isSameOrigin(request) else { throw Self.crossSiteRequest }
        if let cookie = DashboardSessions.cookie(in: request.headers[values: .cookie]) {
            sessions.close(cookie)
        }
        context.logger.notice("dashboard logout", metadata: ["client": "\(clientKey(request, context))"])
        var response = Self.redirect(to: "login")
        response.headers[.setCookie] =
            "\(DashboardSessions.cookieName)=; Max-Age=0; HttpOnly; Secure; SameSite=Strict"
        return response
    }

    /// 403 for a state change sent from another site.
    static let crossSiteRequest = APIError(
        .forbidden, "cross_site_request", "the request comes from another site; log out from the dashboard itself")

    /// Whether a browser sent the request from this site. `Sec-Fetch-Site` decides when present (`same-origin`, or
    /// `none`: typed or bookmarked); otherwise `Origin` must name the request's host and port; a request with
    /// neither comes from a tool, not from a page of another site.
    static func isSameOrigin(_ request: Request) -> Bool {
        if let name = HTTPField.Name("Sec-Fetch-Site") {
            let site = request.headers[values: name]
            if !site.isEmpty {
                return site.count == 1 && ["same-origin", "none"].contains(site[0].lowercased())
            }
        }
        let origins = request.headers[values: .origin]
        guard !origins.isEmpty else { return true }
        guard origins.count == 1, let origin = URLComponents(string: origins[0]),
            let scheme = origin.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let originHost = origin.host, !originHost.isEmpty,
            let authority = request.head.authority, let host = URLComponents(string: "\(scheme)://\(authority)"),
            let requestHost = host.host
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        return originHost.lowercased() == requestHost.lowercased()
            && (origin.port ?? defaultPort) == (host.port ?? defaultPort)
    }

    /// A page, not cached, framed by nobody, loading nothing from elsewhere.
    static func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        for (name, value) in [("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer")] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        headers[.xContentTypeOptions] = "nosniff"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// 303 to `location` (relative to the request's path, so that it holds where the routes are mounted).
    static func redirect(to location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }

    /// Whether the request asks for HTML (a browser).
    static func acceptsHTML(_ request: Request) -> Bool {
        request.headers[values: .accept].contains { $0.lowercased().contains("text/html") }
    }

    /// The value of the one field `name` of a URL-encoded form, or `nil` (absent, repeated, or not decodable).
    static func formValue(_ name: String, in form: String) -> String? {
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
}
