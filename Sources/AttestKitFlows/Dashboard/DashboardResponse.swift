/// An answer of the operator dashboard, in no framework's types: a status, headers and an HTML body, which each
/// edge copies into its own response.
package struct DashboardResponse: Sendable {
    /// The HTTP status.
    package let status: Int
    /// The headers, in order.
    package var headers: [(name: String, value: String)]
    /// The body (UTF-8 HTML), empty for a redirect.
    package let body: String

    /// A page, not cached, framed by nobody, loading nothing from elsewhere, sending its address to no other origin.
    /// `Referrer-Policy: same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with
    /// the page's own form posts, and one without `Sec-Fetch-Site` could then never sign in or out
    /// (``Dashboard/isSameOrigin(fetchSite:origins:authority:)``).
    package static func html(_ status: Int, _ page: String) -> DashboardResponse {
        DashboardResponse(
            status: status,
            headers: [
                ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"),
                (
                    "Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; "
                        + "base-uri 'none'"
                ),
                ("X-Frame-Options", "DENY"), ("Referrer-Policy", "same-origin"), ("X-Content-Type-Options", "nosniff"),
            ],
            body: page)
    }

    /// 303 to `location` (relative to the request's path, so that it holds where the routes are mounted).
    package static func redirect(to location: String) -> DashboardResponse {
        DashboardResponse(status: 303, headers: [("Location", location), ("Cache-Control", "no-store")], body: "")
    }

    /// This answer with the session cookie set to `value` for `maxAge` seconds (0 and an empty value clear it):
    /// HttpOnly, Secure, SameSite=Strict.
    func settingCookie(_ value: String, maxAge: Int) -> DashboardResponse {
        var response = self
        response.headers.append(
            (
                "Set-Cookie",
                "\(DashboardSessions.cookieName)=\(value); Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict"
            ))
        return response
    }
}
