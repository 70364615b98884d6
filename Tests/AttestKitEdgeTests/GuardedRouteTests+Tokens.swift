import AttestKit
import AttestKitWire
import Testing

/// Session tokens on every edge that serves their routes.
extension GuardedRouteTests {
    @Test(
        "a session token bought with an assertion at POST /v1/tokens is consumed once by the backend",
        arguments: await Edge.matrix())
    func sessionToken(edge: Edge, backend: Backend) async throws {
        var configuration = EdgeConfiguration()
        configuration.sessionTokens = true
        try await edge.run(on: backend, configuration) { app in
            let device = try await EdgeDevice.registered(app)
            let headers = try device.headers("POST", "/v1/tokens", body: [])
            let issued = try await app.send("POST", "/v1/tokens", headers: headers, body: [])
            #expect(issued.status == 201, "\(issued)")
            let token = try #require(issued.decode(TokenResponse.self), "\(issued)").token
            // The assertion that bought it is spent.
            let replay = try await app.send("POST", "/v1/tokens", headers: headers, body: [])
            #expect(replay.status == 409 && replay.code == "counter_not_increasing", "\(replay)")
            let backendToken = [
                ("Authorization", "Bearer \(EdgeConfiguration.backendToken)"), ("Content-Type", "application/json"),
            ]
            let body = Array(try WireJSON.encode(TokenConsumeRequest(token: token)))
            let consumed = try await app.send("POST", "/v1/tokens/consume", headers: backendToken, body: body)
            #expect(consumed.status == 200, "\(consumed)")
            let claims = try #require(consumed.decode(TokenClaims.self), "\(consumed)")
            #expect(claims.trust == "app_attest" && claims.stepUp == false, "\(consumed)")
            let again = try await app.send("POST", "/v1/tokens/consume", headers: backendToken, body: body)
            #expect(again.status == 409, "\(again)")
            // Without the backend's token, no answer about the token.
            let anonymous = try await app.send(
                "POST", "/v1/tokens/consume", headers: [("Content-Type", "application/json")], body: body)
            #expect(anonymous.status == 401, "\(anonymous)")
        }
    }
}
