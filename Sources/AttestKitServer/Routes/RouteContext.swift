import Hummingbird
import Logging
import NIOCore

/// What the API's handlers read from a request's context, whatever the router's context type: so that the routes
/// mount on an application's own router (``AttestKitController``) as well as on the server's.
struct RouteContext: Sendable {
    /// The request's logger.
    let logger: Logger
    /// The peer's address, for rate limits (``ClientAddress``).
    let remoteAddress: SocketAddress?
    /// The path parameters (`{keyId}`).
    let parameters: Parameters

    /// The parts of `context`.
    init(_ context: some RemoteAddressRequestContext) {
        self.logger = context.logger
        self.remoteAddress = context.remoteAddress
        self.parameters = context.parameters
    }
}
