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
    /// Whether a peer connected over a Unix domain socket (a proxy on the same host, such as nginx in front of a
    /// Vapor app serving on a socket) is a trusted proxy. Such a peer has no address: untrusted, every request over
    /// the socket is `unknown`, one budget for every client.
    public let trustsUnixSocketPeers: Bool

    /// Believes `header` from the `trustedProxies` only (and from a Unix-socket peer when `trustsUnixSocketPeers`),
    /// and counts an IPv6 client by its first `ipv6PrefixLength` bits (clamped to 32 to 64; a /64 by default).
    public init(
        trustedProxies: [IPNetwork], header: ClientAddressHeader = .xForwardedFor, ipv6PrefixLength: Int = 64,
        trustsUnixSocketPeers: Bool = false
    ) {
        self.trustedProxies = trustedProxies
        self.header = header
        self.ipv6PrefixLength = Self.clamped(ipv6PrefixLength)
        self.trustsUnixSocketPeers = trustsUnixSocketPeers
    }

    /// Refuses trusted proxies that cannot be meant: a network holding every address of its family
    /// (``IPNetwork/holdsEveryAddress``) would make every peer a proxy, so any client could name its own address in
    /// the forwarding header and escape every per-address limit.
    /// - Throws: ``ConfigurationError`` for `http.trusted-proxies`.
    public static func checkTrustedProxies(_ proxies: [IPNetwork]) throws(ConfigurationError) {
        if let network = proxies.first(where: \.holdsEveryAddress) {
            throw ConfigurationError(
                "http.trusted-proxies",
                "holds \(network), every address: every peer would be trusted, so any client could name its own "
                    + "address in the forwarding header and escape every per-address limit; list only the proxies' "
                    + "own addresses")
        }
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
        guard let peer, let address = IPNetwork.addressBytes(peer) else { return nil }
        guard isTrusted(address) else { return address }
        return walk(from: address, hops: Self.forwardedHops(headers, from: header))
    }

    /// From `start` towards the origin: while the address is a trusted proxy's, the hop it reported (the last of
    /// `hops`) replaces it; an unreadable hop stops the walk at the proxy that reported it.
    private func walk(from start: [UInt8], hops: [[UInt8]?]) -> [UInt8] {
        var (current, hops) = (start, hops)
        while isTrusted(current), let hop = hops.popLast() {
            guard let hop else { return current }
            current = hop
        }
        return current
    }

    /// The rate-limit key of a request whose peer is connected over a Unix domain socket: with
    /// ``trustsUnixSocketPeers``, the address the peer forwarded in ``header`` (walked past trusted proxies as
    /// ``rateLimitKey(peer:headers:)`` walks); otherwise, or when that hop cannot be read, `unknown`.
    public func rateLimitKey(unixSocketPeerWithHeaders headers: (String) -> [String]) -> String {
        guard trustsUnixSocketPeers else { return "unknown" }
        var hops = Self.forwardedHops(headers, from: header)
        guard let last = hops.popLast(), let first = last else { return "unknown" }
        return Self.rateLimitKey(of: walk(from: first, hops: hops), ipv6PrefixLength: ipv6PrefixLength)
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
            return elements(headers("Forwarded"), quoted: true).map { element in
                element.flatMap(forwardedFor).flatMap(address(ofNode:))
            }
        case .xForwardedFor:
            return elements(headers("X-Forwarded-For"), quoted: false).map { element in
                element.flatMap(address(ofNode:))
            }
        }
    }

    /// The comma-separated elements of the header lines, origin first, bounded in bytes and count: the last
    /// ``maximumHops``, read from the right, since proxies append their hops at the end and what precedes them is
    /// the client's own. `nil` for an element that cannot be read: cut by the bound of ``maximumHeaderBytes`` (what
    /// comes before may be any length: ignoring the whole header would count the client as its proxy, a key the
    /// client could choose), or, in a `Forwarded` header (`quoted`), with a quoted string left open. In a `Forwarded`
    /// header a comma within a quoted string (`host="a,for=198.51.100.7"`) separates nothing (RFC 7239 §4), so no
    /// text a proxy quotes after its `for=` makes an element of its own. Empty elements (`a,,b`, a trailing comma)
    /// are skipped, as the list syntax of HTTP asks (RFC 9110 §5.6.1).
    private static func elements(_ lines: [String], quoted: Bool) -> [Substring?] {
        guard !lines.isEmpty else { return [] }
        let joined = lines.joined(separator: ",")
        let utf8 = joined.utf8
        let truncated = utf8.count > maximumHeaderBytes
        let start = truncated ? utf8.index(utf8.endIndex, offsetBy: -maximumHeaderBytes) : utf8.startIndex
        var elements: [Substring?] = []
        var end = utf8.endIndex
        var index = utf8.endIndex
        var inQuotes = false
        while index > start, elements.count < maximumHops {
            let previous = utf8.index(before: index)
            let byte = utf8[previous]
            if quoted, byte == UInt8(ascii: "\""), !isEscaped(previous, in: utf8, from: start) {
                inQuotes.toggle()
            } else if byte == UInt8(ascii: ","), !inQuotes {
                let element = trimmed(joined[index..<end])
                if !element.isEmpty { elements.append(element) }
                end = previous
            }
            index = previous
        }
        if elements.count < maximumHops {
            // The leftmost element: whole when the header was, and its quotes closed.
            if truncated || inQuotes {
                elements.append(nil)
            } else if case let element = trimmed(joined[start..<end]), !element.isEmpty {
                elements.append(element)
            }
        }
        return elements.reversed()
    }

    /// Whether the byte at `index` follows an odd number of backslashes (a quoted-pair, RFC 7230 §3.2.6).
    private static func isEscaped(_ index: String.Index, in utf8: String.UTF8View, from start: String.Index) -> Bool {
        var backslashes = 0
        var cursor = index
        while cursor > start {
            cursor = utf8.index(before: cursor)
            guard utf8[cursor] == UInt8(ascii: "\\") else { break }
            backslashes += 1
        }
        return backslashes % 2 == 1
    }

    /// The value of the one `for` parameter of a `Forwarded` element, its pairs split at semicolons outside quoted
    /// strings; `nil` when it has none, more than one (which would a proxy mean?), or a quoted string left open.
    /// Read byte by byte, as ``elements(_:quoted:)`` reads quotes and backslashes (a quote after an odd run of
    /// backslashes is escaped): by characters, a quote followed by a combining mark would be another character.
    private static func forwardedFor(_ element: Substring) -> Substring? {
        var pairs: [Substring] = []
        var inQuotes = false
        var escaped = false
        let utf8 = element.utf8
        var pairStart = utf8.startIndex
        for index in utf8.indices {
            let byte = utf8[index]
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == UInt8(ascii: ";"), !inQuotes {
                pairs.append(element[pairStart..<index])
                pairStart = utf8.index(after: index)
            }
        }
        guard !inQuotes else { return nil }
        pairs.append(element[pairStart...])
        let values = pairs.compactMap { pair -> Substring? in
            let pair = trimmed(pair)
            guard pair.lowercased().hasPrefix("for=") else { return nil }
            return pair.dropFirst(4)
        }
        return values.count == 1 ? values.first : nil
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
