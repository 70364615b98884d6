public import AttestKitStore
public import Vapor

extension Request {
    /// This request's view of AttestKit: the verified key after ``AttestKitMiddleware``, and the flows.
    public var attestKit: AttestKitRequest { AttestKitRequest(request: self) }
}

/// A request's view of AttestKit (`req.attestKit`).
public struct AttestKitRequest: Sendable {
    let request: Request

    /// The key whose assertion ``AttestKitMiddleware`` verified for this request, or `nil` on a route it does
    /// not guard.
    public var key: KeyRecord? { request.storage[VerifiedKeyKey.self] }

    /// The application's flows, or `nil` before they are configured.
    public var services: AttestKitServices? { request.application.attestKit }

    func setKey(_ key: KeyRecord) { request.storage[VerifiedKeyKey.self] = key }
}

/// Where the verified key lives in `Request.storage`.
struct VerifiedKeyKey: StorageKey {
    typealias Value = KeyRecord
}
