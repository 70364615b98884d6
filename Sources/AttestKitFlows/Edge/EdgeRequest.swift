/// A request to one of the routes of ``AttestKitRoute/all``, as an edge received it: what
/// ``AttestKitApplication/respond(to:_:body:)`` reads of it. The body is read through the closure given beside it,
/// once the use case knows it needs one.
public struct EdgeRequest: Sendable {
    /// The method.
    public var method: String
    /// The path and query as sent on the request line (the target an assertion over this request binds).
    public var target: String
    /// Finds a header by name: absent, one value, or repeated.
    public var header: @Sendable (String) -> AssertionHeaders.Lookup
    /// The `{keyId}` path parameter as sent (percent-encoded), on the routes that have one.
    public var keyID: String?
    /// Works out the client's address as a rate-limit key (``ClientAddress``), when a use case budgets by it.
    public var clientAddress: @Sendable () -> String
    /// The client's address as a rate-limit key.
    public var client: String { clientAddress() }

    /// A request.
    public init(
        method: String, target: String, header: @escaping @Sendable (String) -> AssertionHeaders.Lookup,
        keyID: String? = nil, client: @escaping @Sendable () -> String
    ) {
        self.method = method
        self.target = target
        self.header = header
        self.keyID = keyID
        self.clientAddress = client
    }
}
