import AttestKit
import Foundation

/// The identifier of a stored challenge: 16 random bytes, sent to clients as 22 base64url characters.
///
/// The identifier names a challenge; it is not the challenge. A client sends it back with its
/// attestation or assertion, and the server consumes the challenge by it. ``init(string:)`` checks the
/// text before any database sees it.
public struct ChallengeID: Sendable, Hashable, CustomStringConvertible {
    /// The number of identifier bytes.
    public static let byteCount = 16

    /// The 16 identifier bytes.
    public let bytes: [UInt8]

    /// Creates an identifier from its 16 bytes.
    /// - Throws: ``StoreError/Code/invalidInput`` unless exactly 16 bytes are given.
    public init(bytes: some Collection<UInt8>) throws(StoreError) {
        guard bytes.count == Self.byteCount else {
            throw StoreError(.invalidInput, "a challenge identifier has \(Self.byteCount) bytes")
        }
        self.bytes = Array(bytes)
    }

    /// Parses the unpadded base64url form that ``string`` produces.
    /// - Throws: ``StoreError/Code/invalidInput`` for any other text.
    public init(string: some StringProtocol) throws(StoreError) {
        guard string.utf8.count == 22,
            string.utf8.allSatisfy({ Self.isBase64URL($0) }),
            let decoded = Base64.decode(string)
        else {
            throw StoreError(.invalidInput, "a challenge identifier is 22 base64url characters")
        }
        try self.init(bytes: decoded)
        guard self.string == String(string) else {
            throw StoreError(.invalidInput, "a challenge identifier is 22 canonical base64url characters")
        }
    }

    /// A fresh random identifier.
    public static func random(using generator: inout some RandomNumberGenerator) -> ChallengeID {
        ChallengeID(unchecked: RandomBytes.make(count: byteCount, using: &generator))
    }

    private init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Unpadded base64url, 22 characters.
    public var string: String {
        var text = Base64.encode(bytes)
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// The same as ``string``: an identifier is not a secret.
    public var description: String { string }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}

/// Random bytes from an injected generator.
enum RandomBytes {
    /// `count` bytes from `generator`.
    static func make(count: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}
