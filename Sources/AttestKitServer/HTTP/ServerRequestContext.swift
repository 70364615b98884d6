public import AttestKitFlows
public import AttestKitStore
public import Hummingbird
public import NIOCore

/// A request context that can carry the key an assertion was verified with: what ``AttestKitMiddleware`` needs
/// from a Hummingbird application's context.
public protocol AttestedRequestContext: RequestContext {
    /// The key whose assertion authenticated this request, with this assertion's counter, set by
    /// ``AttestKitMiddleware``; `nil` before.
    var attestedKey: KeyRecord? { get set }
    /// What ``AttestKitMiddleware`` decided (trust level, step-up, a reported refusal). A context that does not
    /// store it gets the default, which keeps nothing: declare a stored `var attestation: RequestAttestation?`.
    /// Nested guards need it stored: an inner guard takes the outer guard's proof from it, and without it verifies
    /// the spent assertion again (refused `counter_not_increasing`).
    var attestation: RequestAttestation? { get set }
}

extension AttestedRequestContext {
    /// Keeps nothing: a context that wants the decision declares a stored property.
    public var attestation: RequestAttestation? {
        get { nil }
        set {}
    }
}

/// The request context of ``AttestKitServer``: the client's address (for rate limits) and the attested key.
public struct ServerRequestContext: AttestedRequestContext, RemoteAddressRequestContext {
    /// Hummingbird's storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address.
    public let remoteAddress: SocketAddress?
    /// The key verified by ``AttestKitMiddleware``, if any.
    public var attestedKey: KeyRecord?
    /// What ``AttestKitMiddleware`` decided, if it guarded the route.
    public var attestation: RequestAttestation?

    /// Creates a context for a request on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.attestedKey = nil
        self.attestation = nil
    }

    /// The request limit enforced while collecting bodies; handlers apply the configured, smaller limit.
    public var maxUploadSize: Int { 16 * 1_048_576 }
}
