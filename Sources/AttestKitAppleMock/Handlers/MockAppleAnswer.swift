/// An answer of the mock, independent of the HTTP server: a status, a body and its content type.
struct MockAppleAnswer: Sendable, Hashable {
    /// The HTTP status.
    var status: Int
    /// The body text.
    var text: String
    /// The `Content-Type`, or `nil` for an empty body.
    var contentType: String?

    /// A plain-text answer.
    static func text(_ status: Int, _ text: String) -> MockAppleAnswer {
        MockAppleAnswer(status: status, text: text, contentType: text.isEmpty ? nil : "text/plain; charset=utf-8")
    }

    /// An empty 200.
    static let ok = MockAppleAnswer(status: 200, text: "", contentType: nil)

    /// The text Apple sends with `status` (docs/apple-formats.md §5, §6), for injected faults.
    static func applesText(for status: Int) -> String {
        switch status {
        case 304: ""
        case 400: "Missing or incorrectly formatted payload"
        case 401: "Unable to verify authorization token"
        case 403: "Forbidden"
        case 404: "No Data Found"
        case 405: "Method Not Allowed"
        case 429: "Too Many Requests"
        case 500: "Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }

    // DeviceCheck texts as clients have seen them (docs/apple-formats.md §6 "Bodies actually seen").
    static let badDeviceToken = text(400, "Missing or incorrectly formatted device token payload")
    static let badAuthorization = text(400, "Missing or badly formatted authorization token")
    static let badBits = text(400, "Missing or incorrectly formatted bits")
    static let badTimestamp = text(400, "Missing or incorrectly formatted time stamp")
    static let badPayload = text(400, "Missing or incorrectly formatted payload")
    static let unverifiedToken = text(401, "Unable to verify authorization token")
    static let expiredToken = text(401, "Authorization Token Expired")
    static let bitStateNotFound = text(200, "Failed to find bit state")
    static let methodNotAllowed = text(405, "Method Not Allowed")

    // Receipt exchange texts (docs/apple-formats.md §5).
    static let receiptBadPayload = text(400, "Bad Payload")
    static let incorrectEnvironment = text(400, "Incorrect Environment")
    static let unauthorized = text(401, "Unauthorized")
    static let noData = text(404, "No Data Found")
    static let notModified = MockAppleAnswer(status: 304, text: "", contentType: nil)
    static let serverError = text(500, "Server Error")
}
