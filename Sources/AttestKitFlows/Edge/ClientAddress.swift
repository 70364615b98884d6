/// Who a request comes from, as far as rate limits can tell: the TCP peer, or, when the peer is a trusted proxy,
/// the address the proxies forwarded in the one header they own (``header``); an IPv6 client counted by its prefix
/// (``ipv6PrefixLength``: a /64 by default, one subscriber's whole prefix). Framework-free: each edge gives the
/// peer's address as text and a lookup of the request's header lines, and gets the rate-limit key every per-address
/// budget of the application counts by.
public struct ClientAddress: Sendable {
    /// The proxies whose forwarding headers are believed; empty: only the TCP peer counts.
    public let trustedProxies: [IPNetwork]
    /// The header the trusted proxies write; the other forwarding header is never read, whatever it says.
    public let header: ClientAddressHeader
    /// The prefix length an IPv6 client is counted by (`rate-limit.ipv6-prefix-length`), 32 to 64.
    public let ipv6PrefixLength: Int

    /// Believes `header` from the `trustedProxies` only, and counts an IPv6 client by its first `ipv6PrefixLength`
    /// bits (clamped to 32 to 64; a /64 by default).
    public init(
        trustedProxies: [IPNetwork], header: ClientAddressHeader = .xForwardedFor, ipv6PrefixLength: Int = 64
    ) {
        self.trustedProxies = trustedProxies
        self.header = header
        self.ipv6PrefixLength = Self.clamped(ipv6PrefixLength)
    }

    /// The most forwarding hops read from the headers.
    static let maximumHops = 32
    /// The most header bytes read.
    static let maximumHeaderBytes = 4_096

    /// The rate-limit key of a request from `peer` with the header lines `headers` gives by name:
    /// `192.0.2.1`, `2001:db8:0:1:0:0:0:0/64` or `unknown`.
    ///
    /// - Parameters:
    ///   - peer: The TCP peer's IP address as text (`SocketAddress.ipAddress`), `nil` when unknown (a Unix socket).
    ///   - headers: The values of every line of a header, by name (case-insensitively).
    public func rateLimitKey(peer: String?, headers: (String) -> [String]) -> String {
        guard let address = client(peer: peer, headers: headers) else { return "unknown" }
        return Self.rateLimitKey(of: address, ipv6PrefixLength: ipv6PrefixLength)
    }

    /// The rate-limit key of a client address given as text (the decision route's `client`, as a backend saw it):
    /// `192.0.2.1` or `2001:db8:0:1:0:0:0:0/64`, the key the edges count the same client by when they count an IPv6
    /// client by the same `ipv6PrefixLength` (clamped to 32 to 64); `nil` when `text` is not an IP address.
    public static func rateLimitKey(address text: String, ipv6PrefixLength: Int = 64) -> String? {
        guard let address = IPNetwork.addressBytes(text) else { return nil }
        return rateLimitKey(of: address, ipv6PrefixLength: clamped(ipv6PrefixLength))
    }

    /// The key of an address's bytes: an IPv4 address itself, an IPv6 one by its prefix.
    private static func rateLimitKey(of address: [UInt8], ipv6PrefixLength: Int) -> String {
        if address.count == 4 { return IPNetwork.text(of: address) }
        return IPNetwork.text(of: IPNetwork.masked(address, to: ipv6PrefixLength)) + "/\(ipv6PrefixLength)"
    }

    /// `length` within 32 to 64: longer would give one subscriber a budget per /64 it holds, shorter would put a
    /// whole provider's customers in one budget.
    private static func clamped(_ length: Int) -> Int {
        min(max(length, 32), 64)
    }

    /// The client's address bytes: walking from the peer towards the origin, each trusted proxy is replaced by the
    /// address it says it received the request from; the first untrusted address is the client. A hop that cannot
    /// be read stops the walk at the proxy that reported it, so that a client cannot choose its own key.
    package func client(peer: String?, headers: (String) -> [String]) -> [UInt8]? {
        guard let peer, var current = IPNetwork.addressBytes(peer) else { return nil }
        guard isTrusted(current) else { return current }
        var hops = Self.forwardedHops(headers, from: header)
        while isTrusted(current), let hop = hops.popLast() {
            guard let hop else { return current }
            current = hop
        }
        return current
    }

    private func isTrusted(_ address: [UInt8]) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The forwarded client addresses, origin first, from `header` only: the `for=` of each `Forwarded` element
    /// (RFC 7239) or each `X-Forwarded-For` entry; `nil` for a hop that is not an IP address (`unknown`, an
    /// obfuscated name, garbage). Reading the other header too would let a client put its own hops before the
    /// proxy's: a proxy appends to one header and passes the other through.
    package static func forwardedHops(_ headers: (String) -> [String], from header: ClientAddressHeader) -> [[UInt8]?] {
        switch header {
        case .forwarded:
            let forwarded = headers("Forwarded")
            return elements(forwarded).map { element in
                let pairs = element.split(separator: ";")
                guard
                    let value = pairs.lazy.compactMap({ pair -> Substring? in
                        let pair = trimmed(pair)
                        guard pair.lowercased().hasPrefix("for=") else { return nil }
                        return pair.dropFirst(4)
                    }).first
                else { return nil }
                return address(ofNode: value)
            }
        case .xForwardedFor:
            let xff = headers("X-Forwarded-For")
            return elements(xff).map { address(ofNode: $0) }
        }
    }

    /// The comma-separated elements of the header lines, bounded in bytes and count: the last ones, since proxies
    /// append their hops at the end. Of a longer header only its last ``maximumHeaderBytes`` are read, from the
    /// first comma among them (what comes before is the client's own, and may be any length: ignoring the whole
    /// header would count the client as its proxy, a key the client could choose). Without a comma among them the
    /// last element is that long, no address: one unreadable hop.
    private static func elements(_ lines: [String]) -> [Substring] {
        let joined = lines.joined(separator: ",")
        var text = Substring(joined)
        if joined.utf8.count > maximumHeaderBytes {
            let tail = joined.utf8.suffix(maximumHeaderBytes)
            guard let comma = tail.firstIndex(of: UInt8(ascii: ",")) else { return [""] }
            text = joined[joined.utf8.index(after: comma)...]
        }
        return Array(text.split(separator: ",").map { trimmed($0) }.suffix(maximumHops))
    }

    /// `text` without leading and trailing spaces and tabs.
    private static func trimmed(_ text: Substring) -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return text[first...last]
    }

    /// The address of a node: `192.0.2.1`, `192.0.2.1:80`, `"[2001:db8::1]:443"`, `2001:db8::1`.
    private static func address(ofNode node: Substring) -> [UInt8]? {
        var text = trimmed(node)
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            return IPNetwork.addressBytes(String(text[text.index(after: text.startIndex)..<close]))
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = text[..<colon]
        }
        return IPNetwork.addressBytes(String(text))
    }
}
