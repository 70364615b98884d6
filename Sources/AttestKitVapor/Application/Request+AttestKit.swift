public import AttestKitFlows
public import AttestKitStore
public import Vapor

extension Request {
    /// This request's view of AttestKit: the verified key after ``AttestKitMiddleware``, and the application.
    public var attestKit: AttestKitRequest { AttestKitRequest(request: self) }
}

/// A request's view of AttestKit (`req.attestKit`).
public struct AttestKitRequest: Sendable {
    let request: Request

    /// The key whose assertion ``AttestKitMiddleware`` verified for this request, or `nil` on a route it does
    /// not guard.
    public var key: KeyRecord? { request.storage[VerifiedKeyKey.self] }

    /// AttestKit as configured on `app.attestKit`, or `nil` before it is.
    public var integration: AttestKitIntegration? { request.application.attestKit }

    /// The decisions (``AttestKitIntegration/application``), or `nil` before `app.attestKit` is configured.
    public var application: AttestKitApplication? { request.application.attestKit?.application }

    /// The rate-limit key of the request's client (``AttestKitIntegration/client(of:)``), `unknown` before
    /// `app.attestKit` is configured.
    public var client: String { request.application.attestKit?.client(of: request) ?? "unknown" }

    /// What ``AttestKitMiddleware`` decided (trust level, step-up, a reported refusal), or `nil` on a route it does
    /// not guard.
    public var attestation: RequestAttestation? { request.storage[AttestationKey.self] }

    func setAttestation(_ attestation: RequestAttestation) {
        request.storage[AttestationKey.self] = attestation
        // Always the latest guard's key, as Hummingbird's context: an inner guard that verified none (a reported
        // refusal) must not leave an outer guard's key beside its refusal.
        request.storage[VerifiedKeyKey.self] = attestation.key
    }
}

/// Where the guard's decision lives in `Request.storage`.
struct AttestationKey: StorageKey {
    typealias Value = RequestAttestation
}

/// Where the verified key lives in `Request.storage`.
struct VerifiedKeyKey: StorageKey {
    typealias Value = KeyRecord
}
