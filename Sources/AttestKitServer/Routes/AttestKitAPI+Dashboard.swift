import AttestKitFlows
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension AttestKitAPI {
    /// `GET /dashboard` (operator: the admin token or a session): the operator dashboard
    /// (`Dashboard.page(exposition:)`), from the service's own exposition.
    func dashboard(_: Request, _: RouteContext) async throws -> Response {
        Self.response(await dashboard.page { String(decoding: metrics.exposition(), as: UTF8.self) })
    }

    /// `GET /dashboard/login`: the login form.
    func dashboardLoginForm(_: Request, _: RouteContext) async throws -> Response {
        Self.response(try dashboard.loginForm())
    }

    /// `POST /dashboard/login` (form `token=<admin token>`): a session cookie and a redirect to the dashboard, or the
    /// form again with 401 (`Dashboard.login`: same-origin only, 403 `cross_site_request`; rate limited per client
    /// address, a wrong token spends the client's credential failure budget).
    func dashboardLogin(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let fetchSite = HTTPField.Name("Sec-Fetch-Site").map { request.headers[values: $0] } ?? []
        return Self.response(
            try await dashboard.login(
                client: clientKey(request, context), logger: context.logger, fetchSite: fetchSite,
                origins: request.headers[values: .origin], authority: request.head.authority
            ) { limit in
                Array(try await request.collectBody(upTo: limit).readableBytesView)
            })
    }

    /// `POST /dashboard/logout` (the admin token or a session): closes the session the cookie names on every replica,
    /// clears the cookie and sends the browser to the login form; same-origin only (403 `cross_site_request`).
    func dashboardLogout(_ request: Request, _ context: RouteContext) async throws -> Response {
        let fetchSite = HTTPField.Name("Sec-Fetch-Site").map { request.headers[values: $0] } ?? []
        return Self.response(
            try await dashboard.logout(
                cookies: request.headers[values: .cookie], fetchSite: fetchSite,
                origins: request.headers[values: .origin], authority: request.head.authority,
                client: clientKey(request, context), logger: context.logger))
    }

    /// The dashboard's answer as Hummingbird's response.
    static func response(_ answer: DashboardResponse) -> Response {
        var headers = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) }
        }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: answer.body)))
    }
}
