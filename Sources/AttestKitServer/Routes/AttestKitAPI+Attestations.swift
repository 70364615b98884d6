import AttestKitFlows
import AttestKitWire
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/attestations` (app): 201 with the key record (``AttestKitApplication/registerAttestation(_:client:)``).
    func attest(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(AttestationRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(
            .created, try await application.registerAttestation(body, client: clientKey(request, context)))
    }

    /// `POST /v1/key-attestations` (app): an attestation that binds an app key (docs/key-attestation.md); 201 with
    /// the key record, the app key's thumbprint and, with a CA configured, its certificate
    /// (``AttestKitApplication/registerKeyAttestation(_:client:)``).
    func attestKey(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            KeyAttestationRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(
            .created, try await application.registerKeyAttestation(body, client: clientKey(request, context)))
    }

    /// `POST /v1/challenges` (app): ``AttestKitApplication/issueChallenge(_:client:)``.
    func issueChallenge(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            ChallengeRequest.self, from: &request, limit: configuration.bodyLimit, emptyAsObject: true)
        return JSONResponse.make(
            .created, try await application.issueChallenge(body, client: clientKey(request, context)))
    }
}
