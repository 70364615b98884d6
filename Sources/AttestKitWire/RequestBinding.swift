import Crypto

/// The canonical client data that binds an App Attest assertion to one HTTP request.
///
/// The app builds these bytes for the request it is about to send, passes SHA-256 of them to
/// `DCAppAttestService.generateAssertion(_:clientDataHash:)`, and sends the request with the assertion.
/// The server rebuilds the same bytes from the request it actually received; an assertion made for another
/// method, path, query, body or challenge does not verify.
///
/// The bytes are UTF-8 text, five lines joined by a single line feed (`0x0A`), no trailing line feed:
///
/// ```text
/// attestkit-assertion-v1
/// POST
/// /v1/orders?coupon=SPRING
/// 5f1c…(64 lower-case hex digits: SHA-256 of the exact body bytes; of nothing for an empty body)
/// challenge:0b6f1f5c-…   or   timestamp:1763700000000
/// ```
///
/// - The method is upper case (`GET`, `POST`, ...).
/// - The path and query are the request target exactly as sent on the request line (origin form: starts with
///   `/`, percent-encoding and parameter order preserved, no fragment).
/// - Freshness is a one-time server challenge id (`challenge:`) or the client's clock in Unix milliseconds
///   (`timestamp:`), which the server accepts within a window.
///
/// This type is the whole wire contract between the app side and the server side; it depends on nothing
/// but SHA-256, so an app can use it without pulling any server code.
public struct RequestBinding: Sendable, Hashable {
    /// The first line, naming this format and its version.
    public static let version = "attestkit-assertion-v1"
    /// The longest request target accepted, in bytes.
    public static let maximumTargetLength = 8192

    /// The upper-case HTTP method.
    public let method: String
    /// The request target: path and query as sent.
    public let target: String
    /// SHA-256 of the request body.
    public let bodySHA256: [UInt8]
    /// The freshness proof: a challenge or a timestamp, never ``Freshness/vouchedByCaller``.
    public let freshness: Freshness

    /// Binds a request.
    ///
    /// - Parameters:
    ///   - method: The HTTP method; upper-cased.
    ///   - target: Path and query exactly as sent, starting with `/`.
    ///   - body: The exact body bytes (empty for none).
    ///   - freshness: The challenge id or timestamp.
    /// - Throws: ``RequestBindingError`` when a part cannot be written unambiguously.
    public init(method: String, target: String, body: some Sequence<UInt8>, freshness: Freshness)
        throws(RequestBindingError)
    {
        try self.init(
            method: method, target: target, bodySHA256: Array(SHA256.hash(data: Array(body))), freshness: freshness)
    }

    /// Binds a request whose body hash is already known.
    /// - Throws: ``RequestBindingError`` when a part cannot be written unambiguously.
    public init(method: String, target: String, bodySHA256: [UInt8], freshness: Freshness) throws(RequestBindingError) {
        try Self.check(method: method, target: target)
        let method = method.uppercased()
        guard bodySHA256.count == 32 else { throw RequestBindingError(.invalidBodyHash) }
        switch freshness {
        case .challenge(let id):
            guard Self.isChallengeID(id) else {
                throw RequestBindingError(.invalidFreshness)
            }
        case .timestamp(let milliseconds):
            guard milliseconds >= 0 else { throw RequestBindingError(.invalidFreshness) }
        case .vouchedByCaller:
            // Canonical client data always names its freshness.
            throw RequestBindingError(.invalidFreshness)
        }
        self.method = method
        self.target = target
        self.bodySHA256 = bodySHA256
        self.freshness = freshness
    }

    /// Checks that `method` and `target` can be bound: a method of 1 to 16 ASCII letters, a target that starts with
    /// `/` and holds at most ``maximumTargetLength`` visible ASCII characters, no fragment.
    /// - Throws: ``RequestBindingError`` `invalid_method` or `invalid_target`.
    public static func check(method: String, target: String) throws(RequestBindingError) {
        // ASCII letters only, checked before upper-casing: Unicode case mapping would turn `ß` into `SS`.
        guard !method.isEmpty, method.utf8.count <= 16,
            method.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else {
            throw RequestBindingError(.invalidMethod)
        }
        guard target.utf8.first == UInt8(ascii: "/"), target.utf8.count <= maximumTargetLength,
            target.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "#") })
        else {
            throw RequestBindingError(.invalidTarget)
        }
    }

    /// The canonical client data bytes.
    public var clientData: [UInt8] {
        let hex = Self.hex(bodySHA256)
        let proof: String =
            switch freshness {
            case .challenge(let id): "challenge:\(id)"
            case .timestamp(let milliseconds): "timestamp:\(milliseconds)"
            // Refused by the initializer.
            case .vouchedByCaller: "vouched"
            }
        return Array([Self.version, method, target, hex, proof].joined(separator: "\n").utf8)
    }

    /// SHA-256 of ``clientData``: what the app passes to `generateAssertion` as `clientDataHash`.
    public var clientDataHash: [UInt8] { Array(SHA256.hash(data: clientData)) }

    /// The prefix every AttestKit client data format starts with (`attestkit-assertion-v1`, ...).
    public static let formatPrefix = "attestkit-"

    /// Whether `clientData` claims to be an AttestKit format: it starts with ``formatPrefix``. A server must then
    /// parse it strictly (``init(clientData:)``) and refuse it when that fails, never take it as the caller's own
    /// scheme: otherwise a near-canonical variant would escape the freshness the canonical form demands.
    public static func claimsAttestKitFormat(_ clientData: some Collection<UInt8>) -> Bool {
        clientData.starts(with: formatPrefix.utf8)
    }

    /// Parses canonical client data (for servers that receive the raw bytes instead of the request parts).
    /// - Throws: ``RequestBindingError`` unless `clientData` is exactly what ``clientData`` would produce.
    public init(clientData: some Collection<UInt8>) throws(RequestBindingError) {
        guard clientData.count <= Self.maximumTargetLength + 512 else { throw RequestBindingError(.malformed) }
        let lines = clientData.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard lines.count == 5, let version = Self.ascii(lines[0]), version == Self.version,
            let method = Self.ascii(lines[1]), let target = Self.ascii(lines[2]),
            let hex = Self.ascii(lines[3]), let body = Self.unhex(hex), let proof = Self.ascii(lines[4])
        else {
            throw RequestBindingError(.malformed)
        }
        let freshness: Freshness
        if proof.hasPrefix("challenge:") {
            freshness = .challenge(String(proof.dropFirst("challenge:".count)))
        } else if proof.hasPrefix("timestamp:"), let value = Int64(proof.dropFirst("timestamp:".count)) {
            freshness = .timestamp(milliseconds: value)
        } else {
            throw RequestBindingError(.invalidFreshness)
        }
        try self.init(method: method, target: target, bodySHA256: body, freshness: freshness)
        guard self.clientData.elementsEqual(clientData) else { throw RequestBindingError(.malformed) }
    }

    /// `line` as text when it is ASCII (every part of the canonical form is), else `nil`. Not
    /// `String(validating:as:)`, which needs iOS 18: the wire builds for the client's platforms (iOS 14).
    static func ascii(_ line: some Collection<UInt8>) -> String? {
        guard line.allSatisfy({ $0 < 0x80 }) else { return nil }
        return String(decoding: line, as: UTF8.self)
    }

    /// Whether `id` is a challenge id in its allowed form: 1 to 128 characters of base64url's alphabet (what the
    /// service issues; a client checks a challenge answer by it before spending anything on the challenge).
    public static func isChallengeID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy(isChallengeCharacter)
    }

    /// Whether `byte` may appear in a challenge id (base64url's alphabet).
    private static func isChallengeCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] }, as: UTF8.self)
    }

    private static func unhex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 64 else { return nil }
        var out: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// Lower-case only: the canonical form has exactly one spelling.
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
