public import AttestKit
import AttestKitWire
import Crypto

/// The deployment's allow-list of debug tokens: secrets a Simulator or CI build sends (`X-AttestKit-Debug-Token`)
/// instead of an assertion, accepted at the lowest ``TrustLevel`` (`debug`) and counted apart.
///
/// App Attest does not run in the Simulator; this replaces the bypasses teams hand-roll. Each token is at least 32
/// characters and compared in constant time with every token of the list. Refused outright while production keys
/// are allowed: a debug token must never open a production deployment.
public struct DebugTokens: Sendable {
    private let tokens: [[UInt8]]

    /// The least length of a token, in bytes.
    public static let minimumLength = 32
    /// The greatest length of a token read from a request, in bytes.
    public static let maximumLength = 256

    /// No token: debug tokens are refused.
    public static let none = DebugTokens(checked: [])

    /// An allow-list for a deployment accepting `environments`.
    /// - Throws: `debug_tokens_refused` (not configured) when `environments` allows production and the list is not
    ///   empty; `invalid_field` for a token shorter than 32 or longer than 256 bytes, or holding a comma.
    public init(_ tokens: [String], environments: EnvironmentPolicy) throws(FlowError) {
        guard !tokens.isEmpty else {
            self.init(checked: [])
            return
        }
        guard !environments.allows(.production) else {
            throw FlowError(
                .debugTokensRefused, .notConfigured,
                "debug tokens are configured while production keys are allowed; they are for development only")
        }
        for token in tokens where !(Self.minimumLength...Self.maximumLength).contains(token.utf8.count) {
            throw FlowError.invalidField("debug.tokens", "holds tokens of 32 to 256 bytes (ASCII characters)")
        }
        // A header value with a comma is a repeated header joined by a proxy (`AssertionHeaders.Lookup`): such a
        // token could never be presented.
        for token in tokens where token.utf8.contains(UInt8(ascii: ",")) {
            throw FlowError.invalidField("debug.tokens", "holds tokens without commas")
        }
        self.init(checked: tokens.map { Array($0.utf8) })
    }

    private init(checked: [[UInt8]]) { self.tokens = checked }

    /// Whether no token is configured.
    public var isEmpty: Bool { tokens.isEmpty }

    /// Whether `presented` is one of the tokens. Every token is compared, whatever matched.
    public func contains(_ presented: String) -> Bool {
        let bytes = Array(presented.utf8)
        guard bytes.count <= Self.maximumLength else { return false }
        var matched = false
        for token in tokens where ConstantTime.equal(bytes, token) { matched = true }
        return matched
    }

    /// The fingerprint of `presented`, one of the tokens: `debug:` and the base64url (no padding) of the first 16
    /// bytes of its SHA-256. It names the token in what it bought (the `sub` of a session token) without revealing
    /// it, and cannot be taken for an App Attest key id (`:` is not base64url).
    /// - Throws: `debug_token_invalid` (unauthenticated) when `presented` is not one of the tokens.
    public func fingerprint(of presented: String) throws(FlowError) -> String {
        guard contains(presented) else {
            throw FlowError(.debugTokenInvalid, .unauthenticated, "the debug token is not one of this deployment's")
        }
        return Self.fingerprint(Array(presented.utf8))
    }

    /// Whether `fingerprint` is the fingerprint of one of the tokens (compared in constant time with every one): a
    /// session token bought with a debug token is honoured only while that token is still on the list.
    public func holds(fingerprint: String) -> Bool {
        let presented = Array(fingerprint.utf8)
        var matched = false
        for token in tokens where ConstantTime.equal(presented, Array(Self.fingerprint(token).utf8)) {
            matched = true
        }
        return matched
    }

    private static func fingerprint(_ token: [UInt8]) -> String {
        "debug:" + Base64URL.encode(Array(SHA256.hash(data: token).prefix(16)))
    }
}

extension DebugTokens: CustomStringConvertible, CustomReflectable {
    /// How many tokens; never a token.
    public var description: String { "DebugTokens(\(tokens.count) tokens)" }

    /// No children: the tokens are secrets.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
