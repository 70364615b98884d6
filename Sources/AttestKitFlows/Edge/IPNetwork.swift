import Foundation

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`; a bare address is a network of one),
/// for the trusted proxies whose forwarding header ``ClientAddress`` believes (the service's `http.trusted-proxies`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    let bytes: [UInt8]
    /// The prefix length in bits.
    let prefixLength: Int

    /// Parses `address/prefix` or a bare address. An IPv4-mapped IPv6 network's prefix counts the 128 bits of its
    /// IPv6 spelling (`::ffff:10.0.0.0/104` is `10.0.0.0/8`; below 96 it is no IPv4 network, and refused).
    /// - Returns: `nil` when the text is not an IP address with an optional prefix length in range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let bytes = IPNetwork.addressBytes(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        // An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) has 96 bits before its own.
        let mapped = bytes.count == 4 && parts[0].contains(":") ? 96 : 0
        var prefixLength = bits
        if parts.count == 2 {
            guard parts[1].utf8.count <= 3, parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let length = Int(parts[1]), (mapped...(mapped + bits)).contains(length)
            else { return nil }
            prefixLength = length - mapped
        }
        self.prefixLength = prefixLength
        self.bytes = IPNetwork.masked(bytes, to: prefixLength)
    }

    /// Whether the network holds every address of its family: a prefix length of 0 (`0.0.0.0/0`, `::/0`,
    /// `::ffff:0.0.0.0/96`), which ``ClientAddress/checkTrustedProxies(_:)`` refuses as a trusted proxy.
    public var holdsEveryAddress: Bool { prefixLength == 0 }

    /// `10.0.0.0/8`.
    public var description: String { "\(IPNetwork.text(of: bytes))/\(prefixLength)" }

    /// Whether `address` (4 or 16 bytes) lies in this network.
    package func contains(_ address: [UInt8]) -> Bool {
        address.count == bytes.count && IPNetwork.masked(address, to: prefixLength) == bytes
    }

    /// The bytes of an IPv4 or IPv6 address in text; an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) gives its 4
    /// IPv4 bytes. `nil` for anything else (a zone index included).
    package static func addressBytes(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        if !text.contains(":") { return ipv4(Substring(text)) }
        guard let bytes = ipv6(text) else { return nil }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes.suffix(4))
        }
        return bytes
    }

    /// Four decimal octets without leading zeros (`010.0.0.1` is ambiguous and refused).
    private static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                part.utf8.count == 1 || part.utf8.first != UInt8(ascii: "0"), let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// Eight groups of 1 to 4 hexadecimal digits, at most one `::` standing for one or more zero groups, and
    /// optionally a dotted IPv4 address as the last 32 bits.
    private static func ipv6(_ text: String) -> [UInt8]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, last: Bool) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if last && index == pieces.count - 1 && piece.contains(".") {
                    guard let v4 = ipv4(piece) else { return nil }
                    bytes += v4
                    continue
                }
                guard (1...4).contains(piece.utf8.count), piece.allSatisfy(\.isHexDigit),
                    let value = UInt16(piece, radix: 16)
                else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0], last: halves.count == 1) else { return nil }
        guard halves.count == 2 else { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1], last: true), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }

    /// `bytes` with every bit after the first `prefixLength` cleared.
    package static func masked(_ bytes: [UInt8], to prefixLength: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = max(0, min(8, prefixLength - index * 8))
            return kept == 8 ? byte : byte & ~(UInt8.max >> kept)
        }
    }

    /// The text of 4 or 16 address bytes (IPv6 in full hexadecimal groups, which is unambiguous).
    package static func text(of bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: bytes.count, by: 2).map { index in
            String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16)
        }.joined(separator: ":")
    }
}
