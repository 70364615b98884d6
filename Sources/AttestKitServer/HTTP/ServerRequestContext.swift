public import AttestKitStore
public import Hummingbird
public import NIOCore

/// A request context that can carry the key an assertion was verified with: what ``AttestKitMiddleware`` needs
/// from a Hummingbird application's context.
public protocol AttestedRequestContext: RequestContext {
    /// The key whose assertion authenticated this request, with this assertion's counter, set by
    /// ``AttestKitMiddleware``; `nil` before.
    var attestedKey: KeyRecord? { get set }
}

/// The request context of ``AttestKitServer``: the client's address (for rate limits) and the attested key.
public struct ServerRequestContext: AttestedRequestContext, RemoteAddressRequestContext {
    /// Hummingbird's storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address.
    public let remoteAddress: SocketAddress?
    /// The key verified by ``AttestKitMiddleware``, if any.
    public var attestedKey: KeyRecord?

    /// Creates a context for a request on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.attestedKey = nil
    }

    /// The request limit enforced while collecting bodies; handlers apply the configured, smaller limit.
    public var maxUploadSize: Int { 16 * 1_048_576 }
}
