public import Vapor

extension Application {
    /// The application's AttestKit flows, configured once at start-up. Until they are, every guarded route and
    /// every AttestKit route answers 503 `attestkit_not_configured` (it fails closed).
    public var attestKit: AttestKitServices? {
        get { storage[AttestKitServicesKey.self] }
        set { storage[AttestKitServicesKey.self] = newValue }
    }
}

/// Where the flows live in `Application.storage`.
struct AttestKitServicesKey: StorageKey {
    typealias Value = AttestKitServices
}
