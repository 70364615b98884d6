public import Hummingbird
public import NIOCore

/// The mock's request context: Hummingbird's core storage plus the connection, so that a fault can drop it.
public struct MockAppleRequestContext: RequestContext {
    /// Hummingbird's storage.
    public var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    public let channel: any Channel

    /// Creates the context of a request.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// Request bodies are read with explicit limits per endpoint.
    public var maxUploadSize: Int { 128 * 1024 }
}
