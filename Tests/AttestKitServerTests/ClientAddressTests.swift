import AttestKitFlows
import AttestKitServer
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import AttestKitServer

/// Rate limits count a client by its address: IPv6 by its /64, and behind trusted proxies by the forwarded address.
@Suite("Client addresses for rate limits")
struct ClientAddressTests {
    static func peer(_ text: String) throws -> SocketAddress { try SocketAddress(ipAddress: text, port: 443) }

    static func headers(_ fields: [(String, String)]) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in fields {
            if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) }
        }
        return headers
    }

    @Test("IP networks parse strictly and match by prefix")
    func networks() throws {
        let parsed = try #require(IPNetwork("10.1.2.3/8"))
        #expect(parsed.description == "10.0.0.0/8")
        #expect(parsed.contains([10, 200, 0, 1]) && !parsed.contains([11, 0, 0, 1]))
        #expect(IPNetwork("2001:db8::1")?.description == "2001:db8:0:0:0:0:0:1/128")
        #expect(IPNetwork("::ffff:192.0.2.1")?.description == "192.0.2.1/32")
        // An IPv4-mapped network's prefix counts its IPv6 spelling's 128 bits.
        #expect(IPNetwork("::ffff:10.0.0.0/104")?.description == "10.0.0.0/8")
        #expect(IPNetwork("::ffff:0:0/96")?.description == "0.0.0.0/0")
        #expect(IPNetwork("::ffff:10.0.0.1/128")?.description == "10.0.0.1/32")
        #expect(IPNetwork("::ffff:10.0.0.1/8") == nil && IPNetwork("::ffff:10.0.0.1/95") == nil)
        #expect(IPNetwork("::/0")?.contains(Array(repeating: 0xAB, count: 16)) == true)
        for bad in [
            "", "10.0.0.0/33", "10.0.0/8", "010.0.0.1", "256.0.0.1", "1.2.3.4/", "1.2.3.4/-1", "1.2.3.4/+8", "::1::2",
            "2001:db8::g", "2001:db8:::1", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "+1::", "example.com", "1.2.3.4/8/8",
        ] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
    }

    @Test("IPv4 by address, IPv6 by /64")
    func keys() throws {
        let address = ClientAddress(trustedProxies: [])
        #expect(address.rateLimitKey(peer: try Self.peer("192.0.2.10"), headers: [:]) == "192.0.2.10")
        let first = address.rateLimitKey(peer: try Self.peer("2001:db8:1:2:aaaa::1"), headers: [:])
        let second = address.rateLimitKey(peer: try Self.peer("2001:db8:1:2:bbbb:cccc:dddd:eeee"), headers: [:])
        let other = address.rateLimitKey(peer: try Self.peer("2001:db8:1:3::1"), headers: [:])
        #expect(first == "2001:db8:1:2:0:0:0:0/64" && first == second && first != other)
        #expect(address.rateLimitKey(peer: try Self.peer("::ffff:192.0.2.10"), headers: [:]) == "192.0.2.10")
        #expect(address.rateLimitKey(peer: nil, headers: [:]) == "unknown")
    }

    @Test("IPv6 by the configured prefix: a /56 is one client, clamped to 32 to 64")
    func configuredPrefix() throws {
        let byFiftySix = ClientAddress(trustedProxies: [], ipv6PrefixLength: 56)
        let first = byFiftySix.rateLimitKey(peer: try Self.peer("2001:db8:1:200::1"), headers: [:])
        let second = byFiftySix.rateLimitKey(peer: try Self.peer("2001:db8:1:2ff:bbbb::1"), headers: [:])
        let other = byFiftySix.rateLimitKey(peer: try Self.peer("2001:db8:1:300::1"), headers: [:])
        #expect(first == "2001:db8:1:200:0:0:0:0/56" && first == second && first != other)
        #expect(byFiftySix.rateLimitKey(peer: try Self.peer("192.0.2.10"), headers: [:]) == "192.0.2.10")
        #expect(ClientAddress.rateLimitKey(address: "2001:db8:1:2ff::9", ipv6PrefixLength: 56) == first)
        #expect(ClientAddress.rateLimitKey(address: "2001:db8:1:2ff::9") == "2001:db8:1:2ff:0:0:0:0/64")
        #expect(ClientAddress(trustedProxies: [], ipv6PrefixLength: 128).ipv6PrefixLength == 64)
        #expect(ClientAddress(trustedProxies: [], ipv6PrefixLength: 0).ipv6PrefixLength == 32)
        #expect(
            ClientAddress.rateLimitKey(address: "2001:db8:1:2ff::9", ipv6PrefixLength: 200)?.hasSuffix("/64") == true)
    }

    @Test("rate-limit.ipv6-prefix-length is read, 32 to 64")
    func prefixSetting() async throws {
        let read = try await ServerConfigurationSource.load(environment: [
            "ATTESTKIT_RATE_LIMIT_IPV6_PREFIX_LENGTH": "48"
        ])
        #expect(read.rateLimits.ipv6PrefixLength == 48)
        #expect(try await ServerConfigurationSource.load(environment: [:]).rateLimits.ipv6PrefixLength == 64)
        for bad in ["31", "65", "0", "128", "56.5"] {
            await #expect(throws: ServerConfigurationError.self, "\(bad)") {
                try await ServerConfigurationSource.load(environment: ["ATTESTKIT_RATE_LIMIT_IPV6_PREFIX_LENGTH": bad])
            }
        }
    }

    @Test("forwarding headers count only from trusted proxies, walked from the right")
    func forwarded() throws {
        let proxies = [try #require(IPNetwork("10.0.0.0/8")), try #require(IPNetwork("2001:db8:ffff::/48"))]
        let trusting = ClientAddress(trustedProxies: proxies)
        let untrusting = ClientAddress(trustedProxies: [])
        let proxy = try Self.peer("10.0.0.5")
        let cases: [([(String, String)], String)] = [
            ([("X-Forwarded-For", "198.51.100.7")], "198.51.100.7"),
            ([("X-Forwarded-For", "203.0.113.9, 198.51.100.7")], "198.51.100.7"),  // the client can't pick its key
            ([("X-Forwarded-For", "203.0.113.9, 198.51.100.7, 10.1.1.1")], "198.51.100.7"),  // two proxies
            ([("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-For", "198.51.100.7")], "198.51.100.7"),
            // The client's own Forwarded is passed through by an X-Forwarded-For proxy: never read.
            ([("Forwarded", "for=198.51.100.7:8080"), ("X-Forwarded-For", "203.0.113.9")], "203.0.113.9"),
            ([("Forwarded", "for=198.51.100.7")], "10.0.0.5"),
            ([("X-Forwarded-For", "garbage")], "10.0.0.5"),  // unreadable: the proxy that reported it
            ([("X-Forwarded-For", "198.51.100.7, 10.1.1.1,")], "198.51.100.7"),  // empty elements are nothing
            ([("X-Forwarded-For", "198.51.100.7,,10.1.1.1")], "198.51.100.7"),
            ([("X-Forwarded-For", ",")], "10.0.0.5"),
            ([("X-Forwarded-For", "198.51.100.7, unknown")], "10.0.0.5"),
            ([], "10.0.0.5"),
            // A client's header of any length, with the proxy's hop appended: the hop counts, never the proxy.
            ([("X-Forwarded-For", String(repeating: "1.2.3.4,", count: 1_000) + " 198.51.100.7")], "198.51.100.7"),
            (
                [("X-Forwarded-For", String(repeating: "x", count: 600)), ("X-Forwarded-For", "198.51.100.7")],
                "198.51.100.7"
            ),
            ([("X-Forwarded-For", String(repeating: "é", count: 3_000) + ", 198.51.100.7")], "198.51.100.7"),
            // One element longer than what is read: an unreadable hop.
            ([("X-Forwarded-For", String(repeating: "9", count: 5_000))], "10.0.0.5"),
        ]
        for (fields, expected) in cases {
            #expect(trusting.rateLimitKey(peer: proxy, headers: Self.headers(fields)) == expected, "\(fields)")
            #expect(untrusting.rateLimitKey(peer: proxy, headers: Self.headers(fields)) == "10.0.0.5")
        }
        // Behind a proxy that writes Forwarded, the client's own X-Forwarded-For is never read.
        let forwarding = ClientAddress(trustedProxies: proxies, header: .forwarded)
        let forwardedCases: [([(String, String)], String)] = [
            (
                [("Forwarded", #"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#)],
                "2001:db8:cafe:0:0:0:0:0/64"
            ),
            ([("Forwarded", "for=198.51.100.7:8080"), ("X-Forwarded-For", "203.0.113.9")], "198.51.100.7"),
            ([("X-Forwarded-For", "203.0.113.9")], "10.0.0.5"),
            ([("Forwarded", "for=_hidden")], "10.0.0.5"),
            ([("Forwarded", "proto=https")], "10.0.0.5"),
        ]
        for (fields, expected) in forwardedCases {
            #expect(forwarding.rateLimitKey(peer: proxy, headers: Self.headers(fields)) == expected, "\(fields)")
        }
        // RFC 7239 quoted strings: a comma or semicolon within one separates nothing, so text a proxy quotes after its
        // for= (a Host header, say) cannot name the client, nor make its element unreadable.
        let quotedCases: [(String, String)] = [
            (#"for=192.0.2.1;host="a,for=198.51.100.7;x=""#, "192.0.2.1"),
            (#"for=192.0.2.1;host="a,b""#, "192.0.2.1"),
            (#"for=192.0.2.1;host="a;for=198.51.100.7""#, "192.0.2.1"),
            (#"for=192.0.2.1;host="a\",for=198.51.100.7""#, "192.0.2.1"),  // an escaped quote closes nothing
            (#"for=203.0.113.9, for=192.0.2.1;host="x,\\""#, "192.0.2.1"),  // an escaped backslash, then the close
            // A quote the client left open before its proxy's element: the proxy's element is still read.
            (#"for="203.0.113.9, for=192.0.2.1"#, "192.0.2.1"),
            // The element cannot be read: two for= (which would a proxy mean?), a quote the proxy left open.
            (#"for=192.0.2.1;for=198.51.100.7"#, "10.0.0.5"),
            (#"for=192.0.2.1;host="open"#, "10.0.0.5"),
            // A quote followed by a combining mark is read as a quote (byte by byte, never as one character).
            ("for=192.0.2.1;host=\"\u{301}\"", "192.0.2.1"),
            ("for=192.0.2.1;host=\"\u{301}a;b\"", "192.0.2.1"),
            ("for=203.0.113.9;host=\"\u{301}, for=192.0.2.1", "192.0.2.1"),
            // Empty elements are nothing (the list syntax of HTTP).
            ("for=192.0.2.1, , for=10.1.1.1,", "192.0.2.1"),
        ]
        for (value, expected) in quotedCases {
            let fields = [("Forwarded", value)]
            #expect(forwarding.rateLimitKey(peer: proxy, headers: Self.headers(fields)) == expected, "\(fields)")
        }
        // An untrusted peer's headers are ignored even when proxies are configured.
        let direct = try Self.peer("198.51.100.99")
        let spoofed = Self.headers([("X-Forwarded-For", "203.0.113.9")])
        #expect(trusting.rateLimitKey(peer: direct, headers: spoofed) == "198.51.100.99")
    }

    @Test("over HTTP: behind a trusted proxy each forwarded client has its own challenge budget")
    func throughTheServer() async throws {
        var options = ServerHarness.Options()
        options.transport = .live  // the peer's address (a trusted proxy on 127.0.0.1) is the subject
        options.rateLimits = .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 2)
        options.trustedProxies = [try #require(IPNetwork("127.0.0.1"))]
        try await ServerHarness.with(.sqlite, options) { harness in
            for client in ["198.51.100.1", "198.51.100.2"] {
                for _ in 0..<2 {
                    let answer = try await harness.post(
                        "/v1/challenges", .object([]), headers: [("X-Forwarded-For", client)])
                    #expect(answer.status == 201, "\(client): \(answer)")
                }
                let limited = try await harness.post(
                    "/v1/challenges", .object([]), headers: [("X-Forwarded-For", client)])
                #expect(limited.status == 429 && limited.errorCode == "rate_limited", "\(client): \(limited)")
            }
        }
    }

    @Test("over HTTP: with rate-limit.ipv6-prefix-length 56, a subscriber's /64s share one challenge budget")
    func prefixThroughTheServer() async throws {
        var options = ServerHarness.Options()
        options.transport = .live  // the peer's address (a trusted proxy on 127.0.0.1) is the subject
        options.rateLimits = .init(
            attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 2, ipv6PrefixLength: 56)
        options.trustedProxies = [try #require(IPNetwork("127.0.0.1"))]
        try await ServerHarness.with(.sqlite, options) { harness in
            var statuses: [Int] = []
            for subnet in ["2001:db8:1:200::1", "2001:db8:1:201::1", "2001:db8:1:2ff::1"] {
                let answer = try await harness.post(
                    "/v1/challenges", .object([]), headers: [("X-Forwarded-For", subnet)])
                statuses.append(answer.status)
            }
            let elsewhere = try await harness.post(
                "/v1/challenges", .object([]), headers: [("X-Forwarded-For", "2001:db8:1:300::1")])
            statuses.append(elsewhere.status)
            #expect(statuses == [201, 201, 429, 201])
        }
    }

    @Test(
        "over HTTP: behind an X-Forwarded-For proxy, a client rotating its own Forwarded header keeps one budget",
        arguments: await StoreKind.all())
    func rotatingForwardedHeader(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.transport = .live  // the peer's address (a trusted proxy on 127.0.0.1) is the subject
        options.rateLimits = .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 3)
        options.trustedProxies = [try #require(IPNetwork("127.0.0.1"))]
        try await ServerHarness.with(kind, options) { harness in
            var statuses: [Int] = []
            for attempt in 0..<6 {
                // What nginx sends on: the client's Forwarded untouched, X-Forwarded-For with the client appended.
                let answer = try await harness.post(
                    "/v1/challenges", .object([]),
                    headers: [("Forwarded", "for=203.0.113.\(attempt)"), ("X-Forwarded-For", "198.51.100.1")])
                statuses.append(answer.status)
            }
            #expect(statuses == [201, 201, 201, 429, 429, 429])
        }
    }
}

extension ClientAddressTests {
    @Test("a Unix-socket peer: unknown unless trusted, then the forwarded client, walked past trusted proxies")
    func unixSocketPeer() throws {
        let lookup: ([(String, String)]) -> (String) -> [String] = { fields in
            { name in fields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
        }
        let proxies = [try #require(IPNetwork("10.0.0.0/8"))]
        let untrusting = ClientAddress(trustedProxies: proxies)
        let trusting = ClientAddress(trustedProxies: proxies, trustsUnixSocketPeers: true)
        let forwarded = lookup([("X-Forwarded-For", "203.0.113.9, 198.51.100.7, 10.1.1.1")])
        #expect(untrusting.rateLimitKey(unixSocketPeerWithHeaders: forwarded) == "unknown")
        #expect(trusting.rateLimitKey(unixSocketPeerWithHeaders: forwarded) == "198.51.100.7")
        #expect(trusting.rateLimitKey(unixSocketPeerWithHeaders: lookup([])) == "unknown")
        #expect(trusting.rateLimitKey(unixSocketPeerWithHeaders: lookup([("X-Forwarded-For", "garbage")])) == "unknown")
        // A trusted hop followed by an unreadable one: the trusted proxy that reported it.
        let unreadable = lookup([("X-Forwarded-For", "garbage, 10.1.1.1")])
        #expect(trusting.rateLimitKey(unixSocketPeerWithHeaders: unreadable) == "10.1.1.1")
        let byPrefix = ClientAddress(trustedProxies: [], ipv6PrefixLength: 48, trustsUnixSocketPeers: true)
        let ipv6 = lookup([("X-Forwarded-For", "2001:db8:1:ff::1")])
        #expect(byPrefix.rateLimitKey(unixSocketPeerWithHeaders: ipv6) == "2001:db8:1:0:0:0:0:0/48")
    }
}
