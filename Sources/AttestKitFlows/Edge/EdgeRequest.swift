/// A request to one of the routes of ``AttestKitRoute/all``, as an edge received it: what
/// ``AttestKitApplication/respond(to:_:body:)`` reads of it. Each edge conforms a small value over its own request
/// type; the body is read through the closure given beside it, once the use case knows it needs one.
public protocol EdgeRequest {
    /// The method.
    var method: String { get }
    /// The path and query as sent on the request line (the target an assertion over this request binds).
    var target: String { get }
    /// The `{keyId}` path parameter as sent (percent-encoded), on the routes that have one.
    var keyID: String? { get }
    /// The client's address as a rate-limit key (``ClientAddress``), worked out when a use case budgets by it.
    var client: String { get }
    /// Finds a header by name: absent, one value, or repeated.
    func header(_ name: String) -> AssertionHeaders.Lookup
}
