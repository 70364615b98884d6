public import Vapor

extension Application {
    /// AttestKit, configured once at start-up (``AttestKitIntegration``). Until it is, every guarded route and every
    /// AttestKit route answers 503 `attestkit_not_configured` (it fails closed).
    public var attestKit: AttestKitIntegration? {
        get { storage[AttestKitIntegrationKey.self] }
        set { storage[AttestKitIntegrationKey.self] = newValue }
    }
}

/// Where AttestKit lives in `Application.storage`.
struct AttestKitIntegrationKey: StorageKey {
    typealias Value = AttestKitIntegration
}
