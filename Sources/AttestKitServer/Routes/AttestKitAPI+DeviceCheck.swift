import AttestKitFlows
import AttestKitWire
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/devicecheck/query` (backend): ``AttestKitApplication/deviceCheckQuery(_:)``.
    func deviceCheckQuery(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(DeviceTokenRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.deviceCheckQuery(body))
    }

    /// `POST /v1/devicecheck/update` (backend): refuses to move a device out of the `banned` state.
    func deviceCheckUpdate(_ request: Request, _ context: RouteContext) async throws -> Response {
        try await deviceCheckUpdate(request, mayUnban: false)
    }

    /// `POST /v1/devicecheck/unban` (operator): an update that may move a device out of the `banned` state.
    func deviceCheckUnban(_ request: Request, _ context: RouteContext) async throws -> Response {
        try await deviceCheckUpdate(request, mayUnban: true)
    }

    private func deviceCheckUpdate(_ request: Request, mayUnban: Bool) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            DeviceCheckUpdateRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.deviceCheckUpdate(body, mayUnban: mayUnban))
    }

    /// `POST /v1/devicecheck/validate` (backend): ``AttestKitApplication/deviceCheckValidate(_:)``.
    func deviceCheckValidate(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(DeviceTokenRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.deviceCheckValidate(body))
    }
}
