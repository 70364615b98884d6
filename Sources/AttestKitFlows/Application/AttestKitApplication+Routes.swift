import AttestKitWire
import Foundation

extension AttestKitApplication {
    /// Answers a request to `route`, one of ``AttestKitRoute/all``: reads its body (when the route takes one, through
    /// `body`, at most the limit it is given), decodes the wire message strictly (`invalid_json` naming the field),
    /// calls the route's use case and encodes its answer. Every edge's routes are this one dispatch; the edge checks
    /// the route's audience first (``authorize(_:authorization:session:client:)``), writes the ``EdgeResponse``, and
    /// maps a thrown error once. `GET /metrics` and the dashboard's pages are the edge's own (their formats are), and
    /// are refused here.
    ///
    /// - Parameters:
    ///   - route: The route the request was routed to.
    ///   - request: What the edge received.
    ///   - body: Collects at most so many bytes of the request's body; whatever it throws (a body over the limit) is
    ///     rethrown untouched, for the edge to map.
    /// - Throws: The use case's ``FlowError``, or `body`'s error.
    public func respond(
        to route: AttestKitRoute, _ request: some EdgeRequest, body: (_ limit: Int) async throws -> [UInt8]
    ) async throws -> EdgeResponse {
        let limit = configuration.bodyLimit
        func message<Message: Decodable>(_ type: Message.Type, emptyAsObject: Bool = false) async throws -> Message {
            try JSONBody.decode(type, from: try await body(limit), emptyAsObject: emptyAsObject)
        }
        switch route.useCase {
        case .issueChallenge:
            let answer = try await issueChallenge(
                try await message(ChallengeRequest.self, emptyAsObject: true), client: request.client)
            return try json(201, answer)
        case .registerAttestation:
            return try json(
                201, try await registerAttestation(try await message(AttestationRequest.self), client: request.client))
        case .registerKeyAttestation:
            let answer = try await registerKeyAttestation(
                try await message(KeyAttestationRequest.self), client: request.client)
            return try json(201, answer)
        case .verifyAssertion:
            // Room for a bound request's body (up to the body limit) as Base64 inside the JSON, as the decision
            // route has: with the body limit alone a body the middleware and the decision route take was 413 here.
            let answer = try await verifyAssertion(
                try JSONBody.decode(AssertionRequest.self, from: try await body(JSONBody.decisionLimit(limit))))
            guard let bytes = AssertionResponseWriter.write(answer) else { return try json(200, answer) }
            return EdgeResponse(status: 200, body: bytes)
        case .verifyRequest:
            let bytes = try await body(JSONBody.decisionLimit(limit))
            return try json(
                200,
                try await verifyRequest(
                    try JSONBody.decodeStrictly(
                        RequestVerificationRequest.self, from: bytes, members: RequestVerificationRequest.members)))
        case .deviceCheckQuery:
            return try json(200, try await deviceCheckQuery(try await message(DeviceTokenRequest.self)))
        case .deviceCheckUpdate, .deviceCheckUnban:
            let answer = try await deviceCheckUpdate(
                try await message(DeviceCheckUpdateRequest.self), mayUnban: route.useCase == .deviceCheckUnban)
            return try json(200, answer)
        case .deviceCheckValidate:
            return try json(200, try await deviceCheckValidate(try await message(DeviceTokenRequest.self)))
        case .issueToken:
            // Refused before the body is read when no signing key is configured.
            guard tokens != nil else { throw FlowError.tokensNotConfigured }
            let bytes = try await body(limit)
            let issued = try await issueToken(
                lookup: { request.header($0) }, method: request.method, target: request.target, body: bytes,
                client: request.client)
            return try json(201, issued)
        case .consumeToken:
            guard tokens != nil else { throw FlowError.tokensNotConfigured }
            return try json(200, try await consumeToken(try await message(TokenConsumeRequest.self)))
        case .introspectToken:
            return try json(200, try await introspectToken(try await message(TokenIntrospectionRequest.self)))
        case .tokenKeys:
            var response = try json(200, try tokenKeys())
            response.cacheControl = "public, max-age=300"
            return response
        case .keyReport:
            return try json(200, try await keyReport(keyID: try Self.keyID(request)))
        case .revokeKey:
            return try json(200, try await revokeKey(keyID: try Self.keyID(request)))
        case .deleteKey:
            try await deleteKey(keyID: try Self.keyID(request))
            return EdgeResponse.noContent
        case .health:
            return try json(200, ["status": "ok"])
        case .ready:
            try await ready()
            return try json(200, ["status": "ready"])
        case .metrics, .dashboard, .dashboardLoginForm, .dashboardLogin, .dashboardLogout:
            throw failure(FlowError(.internalError, .internalFailure, "\(route) is served by the edge itself"))
        }
    }

    /// `value` as the JSON body of an answer with `status` (``WireJSON``).
    private func json(_ status: Int, _ value: some Encodable) throws(FlowError) -> EdgeResponse {
        guard let data = try? WireJSON.encode(value) else {
            throw failure(FlowError(.internalError, .internalFailure, "the answer could not be encoded"))
        }
        return EdgeResponse(status: status, body: Array(data))
    }

    /// The `{keyId}` path parameter, required.
    private static func keyID(_ request: some EdgeRequest) throws(FlowError) -> String {
        guard let keyID = request.keyID else { throw FlowError.invalidField("keyId", "is required") }
        return keyID
    }
}
