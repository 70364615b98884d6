/// The answer of ``AttestKitApplication/respond(to:_:body:)``: a status and a JSON body (`application/json;
/// charset=utf-8`), for the edge to write as it writes answers.
public struct EdgeResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The JSON body.
    public var body: [UInt8]
    /// The `Cache-Control` value: `no-store`, or `public, max-age=300` for the public keys.
    public var cacheControl: String

    /// An answer.
    public init(status: Int, body: [UInt8], cacheControl: String = "no-store") {
        self.status = status
        self.body = body
        self.cacheControl = cacheControl
    }

    /// 204 without a body (and so without a `Content-Type`): a deletion done.
    public static let noContent = EdgeResponse(status: 204, body: [])

    /// Whether the answer has a body, and so a `Content-Type`: every answer but ``noContent``'s.
    public var hasBody: Bool { status != 204 }

    /// The `Content-Type` of every answer with a body: JSON.
    public static let contentType = "application/json; charset=utf-8"
}
