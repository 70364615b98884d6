import AttestKitFlows
import AttestKitWire
import Foundation
import Prometheus
import Vapor

/// The handlers of ``AttestKitRoutes``: each collects the body (bounded by the configuration's `bodyLimit`),
/// decodes it with the flows' strict reader (`JSONBody`, the Hummingbird service's too), calls the use case and
/// encodes its answer.
struct AttestKitHandlers: Sendable {
    let integration: AttestKitIntegration
    let request: Request
    let client: String

    var application: AttestKitApplication { integration.application }
    var bodyLimit: Int { application.configuration.bodyLimit }

    /// The answer of `useCase`.
    func respond(_ useCase: AttestKitRoute.UseCase) async throws -> Response {
        switch useCase {
        case .issueChallenge:
            let body = try await decode(ChallengeRequest.self, emptyAsObject: true)
            return Self.json(.created, try await application.issueChallenge(body, client: client))
        case .registerAttestation:
            let body = try await decode(AttestationRequest.self)
            return Self.json(.created, try await application.registerAttestation(body, client: client))
        case .registerKeyAttestation:
            let body = try await decode(KeyAttestationRequest.self)
            return Self.json(.created, try await application.registerKeyAttestation(body, client: client))
        case .verifyAssertion:
            let body = try JSONBody.decode(AssertionRequest.self, from: try await bytes(limit: bodyLimit))
            return Self.json(.ok, try await application.verifyAssertion(body))
        case .verifyRequest:
            let body = try await decode(RequestVerificationRequest.self, limit: JSONBody.decisionLimit(bodyLimit))
            return Self.json(.ok, try await application.verifyRequest(body))
        case .deviceCheckQuery:
            return Self.json(.ok, try await application.deviceCheckQuery(try await decode(DeviceTokenRequest.self)))
        case .deviceCheckUpdate, .deviceCheckUnban:
            let body = try await decode(DeviceCheckUpdateRequest.self)
            return Self.json(.ok, try await application.deviceCheckUpdate(body, mayUnban: useCase == .deviceCheckUnban))
        case .deviceCheckValidate:
            return Self.json(.ok, try await application.deviceCheckValidate(try await decode(DeviceTokenRequest.self)))
        case .issueToken:
            return try await issueToken()
        case .consumeToken:
            guard application.tokens != nil else { throw FlowError.tokensNotConfigured }
            return Self.json(.ok, try await application.consumeToken(try await decode(TokenConsumeRequest.self)))
        case .introspectToken:
            let body = try await decode(TokenIntrospectionRequest.self)
            return Self.json(.ok, try await application.introspectToken(body))
        case .tokenKeys:
            let response = Self.json(.ok, try application.tokenKeys())
            response.headers.replaceOrAdd(name: .cacheControl, value: "public, max-age=300")
            return response
        case .keyReport:
            return Self.json(.ok, try await application.keyReport(keyID: try keyID()))
        case .revokeKey:
            return Self.json(.ok, try await application.revokeKey(keyID: try keyID()))
        case .health:
            return Self.json(.ok, ["status": "ok"])
        case .ready:
            try await application.ready()
            return Self.json(.ok, ["status": "ready"])
        case .metrics:
            return try await metrics()
        case .dashboard, .dashboardLoginForm, .dashboardLogin, .dashboardLogout:
            // Never mounted (AttestKitRoutes.routes): the dashboard is the Hummingbird service's.
            throw Abort(.notFound)
        }
    }

    /// `POST /v1/tokens`: the request proves itself with the assertion headers over its own method, target and body.
    private func issueToken() async throws -> Response {
        guard application.tokens != nil else { throw FlowError.tokensNotConfigured }
        let body = try await bytes(limit: bodyLimit)
        let headers = request.headers
        let issued = try await application.issueToken(
            lookup: { VaporHeaders.lookup($0, in: headers) }, method: request.method.rawValue,
            target: VaporRequestTarget.candidates(of: request.url).first ?? request.url.string, body: body,
            client: client)
        return Self.json(.created, issued)
    }

    /// `GET /metrics`: the Prometheus exposition of the configured registry, with the key gauges refreshed.
    private func metrics() async throws -> Response {
        guard let registry = integration.prometheus else { throw FlowError.metricsNotConfigured }
        await application.refreshGauges()
        return Response(
            status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(data: Data(registry.emitToBuffer())))
    }

    /// The `{keyId}` path parameter.
    private func keyID() throws(FlowError) -> String {
        guard let text = request.parameters.get("keyId") else { throw FlowError.invalidField("keyId", "is required") }
        return text
    }

    /// At most `limit` bytes of the body.
    private func bytes(limit: Int) async throws -> [UInt8] {
        let collected = try await request.body.collect(max: limit).get()
        return collected.map { Array($0.readableBytesView) } ?? []
    }

    /// The body as `Message` (`JSONBody`).
    private func decode<Message: Decodable>(
        _ type: Message.Type, limit: Int? = nil, emptyAsObject: Bool = false
    ) async throws -> Message {
        try JSONBody.decode(type, from: try await bytes(limit: limit ?? bodyLimit), emptyAsObject: emptyAsObject)
    }

    /// `value` as the JSON body of a response with `status`, not cached.
    static func json(_ status: HTTPResponseStatus, _ value: some Encodable) -> Response {
        guard let data = try? WireJSON.encode(value) else {
            return Response(status: .internalServerError, headers: headers)
        }
        return Response(status: status, headers: headers, body: .init(data: data))
    }

    private static let headers: HTTPHeaders = [
        "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store",
    ]
}

extension FlowError {
    /// 503 `metrics_not_configured`: `GET /metrics` of the Vapor edge without a Prometheus registry.
    static var metricsNotConfigured: FlowError {
        FlowError(
            .init("metrics_not_configured"), .notConfigured,
            "no Prometheus registry is configured (AttestKitIntegration.prometheus)")
    }
}
