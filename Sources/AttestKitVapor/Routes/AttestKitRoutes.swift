import AttestKit
import AttestKitFlows
import AttestKitWire
import AttestKitStore
import Foundation
public import Vapor

/// The routes an app mounts to hand out challenges and register keys, with the same JSON messages and answers
/// as the service's `/v1/challenges`, `/v1/attestations` and `/v1/key-attestations`:
///
/// - `POST challenges`: `{"purpose": "attest" | "assert", "keyId": "..."}` → 201 with the challenge;
/// - `POST attestations`: `{"keyId", "attestation", "challengeId"}` → 201 with the key record;
/// - `POST key-attestations`: `{"keyId", "attestation", "challengeId", "appKey"}` → 201 with the key record and
///   the bound app key (docs/key-attestation.md).
///
/// ```swift
/// try app.grouped("v1").register(collection: AttestKitRoutes())
/// ```
public struct AttestKitRoutes: RouteCollection {
    /// Creates the collection; its routes use the flows configured on `app.attestKit`.
    public init() {}

    /// Mounts `POST challenges`, `POST attestations` and `POST key-attestations` on `routes`.
    public func boot(routes: any RoutesBuilder) throws {
        routes.on(.POST, "challenges", body: .stream) { request in
            await Self.answer(request) { services in try await Self.issueChallenge(request, services) }
        }
        routes.on(.POST, "attestations", body: .stream) { request in
            await Self.answer(request) { services in try await Self.attest(request, services) }
        }
        routes.on(.POST, "key-attestations", body: .stream) { request in
            await Self.answer(request) { services in try await Self.attestKey(request, services) }
        }
    }

    static func issueChallenge(_ request: Request, _ services: AttestKitServices) async throws -> Response {
        let body = try await decode(ChallengeRequest.self, request, services, emptyAsObject: true)
        let purpose = try ChallengeIssuer.purpose(named: body.purpose)
        let keyID = try body.keyId.map { text throws(FlowError) in try Field.keyID(text) }
        let challenge = try await services.issuer.issue(purpose: purpose, keyID: keyID)
        return try created(
            ChallengeResponse(
                challengeId: challenge.id.string, challenge: Data(challenge.bytes).base64EncodedString(),
                purpose: purpose.rawValue, expiresAt: APITime.format(challenge.expiresAt)))
    }

    static func attest(_ request: Request, _ services: AttestKitServices) async throws -> Response {
        let body = try await decode(AttestationRequest.self, request, services, emptyAsObject: false)
        let keyID = try Field.keyID(body.keyId)
        let attestation = try Field.bytes(body.attestation, "attestation", maximum: services.bodyLimit)
        let challengeID = try Field.challengeID(body.challengeId)
        let record = try await services.registrar.register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, now: Date())
        return try created(KeyRecordResponse(record, policy: services.policy.riskPolicy))
    }

    static func attestKey(_ request: Request, _ services: AttestKitServices) async throws -> Response {
        let body = try await decode(KeyAttestationRequest.self, request, services, emptyAsObject: false)
        let keyID = try Field.keyID(body.keyId)
        let attestation = try Field.bytes(body.attestation, "attestation", maximum: services.bodyLimit)
        let challengeID = try Field.challengeID(body.challengeId)
        let appKey = try Field.bytes(body.appKey, "appKey", maximum: KeyAttestationClientData.maximumAppKeyLength)
        let registered = try await services.keyAttestation.register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        return try created(registered.response(policy: services.policy.riskPolicy))
    }

    /// Runs `route` with the configured flows; any error becomes the AttestKit envelope (``AttestKitAbort``).
    static func answer(
        _ request: Request, _ route: (AttestKitServices) async throws -> Response
    ) async -> Response {
        do {
            guard let services = request.application.attestKit else { throw FlowError.notConfiguredVapor }
            return try await route(services)
        } catch {
            return AttestKitAbort(any: error).response()
        }
    }

    static func decode<Message: Decodable>(
        _ type: Message.Type, _ request: Request, _ services: AttestKitServices, emptyAsObject: Bool
    ) async throws -> Message {
        let collected = try await request.body.collect(max: services.bodyLimit).get()
        var bytes = collected.map { Data($0.readableBytesView) } ?? Data()
        if bytes.isEmpty && emptyAsObject { bytes = Data("{}".utf8) }
        do {
            return try WireJSON.decode(Message.self, from: bytes)
        } catch {
            throw FlowError(.init("invalid_json"), .malformed, "the body is not the JSON this route takes")
        }
    }

    static func created(_ message: some Encodable) throws -> Response {
        let body = try WireJSON.encode(message)
        return Response(
            status: .created, headers: ["Content-Type": "application/json; charset=utf-8"], body: .init(data: body))
    }
}
