import AttestKitFlows
import Hummingbird

/// A request to a route of the table as the application's dispatch reads it (`EdgeRequest`): the target as sent,
/// the AttestKit headers, the `{keyId}` parameter, and the client's address worked out only when asked.
struct RouteRequest: EdgeRequest {
    let request: Request
    let context: RouteContext
    let clientAddress: ClientAddress

    var method: String { request.method.rawValue }
    var target: String { request.head.path ?? "/" }
    var keyID: String? { context.parameters.get("keyId") }
    var client: String { clientAddress.rateLimitKey(peer: context.remoteAddress, headers: request.headers) }

    func header(_ name: String) -> AssertionHeaders.Lookup { AttestKitHeaders.value(name, in: request.headers) }
}
