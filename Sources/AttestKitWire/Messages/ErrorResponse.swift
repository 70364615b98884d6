public import Foundation

/// The envelope of every error answer: `{"error": {"code": "...", "message": "..."}}`.
public struct ErrorResponse: Codable, Sendable, Hashable {
    /// The error.
    public struct Detail: Codable, Sendable, Hashable {
        /// The stable snake_case code (`signature_invalid`, `counter_not_increasing`, ...).
        public var code: String
        /// Text for people; may change, never parsed. Never holds keys, tokens or attestation bytes.
        public var message: String

        /// Creates the detail.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The error.
    public var error: Detail

    /// Creates an envelope.
    public init(code: String, message: String) {
        error = Detail(code: code, message: message)
    }

    /// The envelope's JSON (``WireJSON``); an `internal_error` envelope should encoding ever fail.
    public var json: Data {
        (try? WireJSON.encode(self)) ?? Data(#"{"error":{"code":"internal_error","message":"internal error"}}"#.utf8)
    }
}
