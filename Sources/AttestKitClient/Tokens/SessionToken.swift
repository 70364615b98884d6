public import Foundation

/// A session token of the AttestKit service (`POST /v1/tokens`): an ES256 JWT that the app's other backends
/// verify locally with the service's JWKS, and when it expires.
///
/// Its description and mirror omit the token: print it, log it, `dump` it, never the token itself.
public struct SessionToken: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The compact JWS (`header.payload.signature`). Send it to the app's backends; never log it.
    public let token: String
    /// When the token expires by this device's clock: the service's `expiresAt`, moved by the difference between
    /// the two clocks that the answer's `Date` header shows (as the service said when the answer had none). The
    /// token's own `exp` claim stays the service's.
    public let expiresAt: Date

    /// Creates a token.
    public init(token: String, expiresAt: Date) {
        self.token = token
        self.expiresAt = expiresAt
    }

    /// `SessionToken(expiresAt: …)`, without the token.
    public var description: String { "SessionToken(expiresAt: \(expiresAt))" }

    /// Only ``expiresAt``: `dump` and debuggers never show the token.
    public var customMirror: Mirror { Mirror(self, children: ["expiresAt": expiresAt], displayStyle: .struct) }

    /// The longest token accepted from the service, in characters.
    static let maximumLength = 8 * 1024

    /// Whether `text` has the shape of a compact JWS: three non-empty base64url parts, bounded.
    static func isCompactJWS(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= maximumLength else { return false }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty
                && part.utf8.allSatisfy { byte in
                    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                        || byte == 0x2D || byte == 0x5F
                }
        }
    }
}
