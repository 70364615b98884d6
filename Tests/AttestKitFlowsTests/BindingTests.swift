import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Testing

/// The headers and bindings every edge shares, parsed without any HTTP.
struct BindingTests {
    /// A lookup of `headers` by exact name.
    static func lookup(_ headers: [String: AssertionHeaders.Lookup]) -> (String) -> AssertionHeaders.Lookup {
        { headers[$0] ?? .absent }
    }

    static let keyID = String(repeating: "A", count: 43) + "="

    @Test("headers: the key, the assertion and one freshness")
    func headers() throws {
        let parsed = try AssertionHeaders(
            lookup: Self.lookup([
                AttestKitHeaderNames.keyID: .value(Self.keyID), AttestKitHeaderNames.assertion: .value("AAEC"),
                AttestKitHeaderNames.timestamp: .value("1700000000000"),
            ]))
        #expect(parsed.assertion == [0, 1, 2])
        #expect(parsed.freshness == .timestamp(milliseconds: 1_700_000_000_000))
    }

    @Test(
        "headers: refusals and their kinds",
        arguments: [
            ([:], "assertion_required", FlowError.Kind.unauthenticated),
            ([AttestKitHeaderNames.keyID: .repeated], "header_repeated", .malformed),
            (
                [
                    AttestKitHeaderNames.keyID: .value(keyID), AttestKitHeaderNames.assertion: .value("AAEC"),
                    AttestKitHeaderNames.challenge: .repeated,
                ], "header_repeated", .malformed
            ),
            (
                [
                    AttestKitHeaderNames.keyID: .value(keyID), AttestKitHeaderNames.assertion: .value("AAEC"),
                ], "assertion_required", .unauthenticated
            ),
            (
                [
                    AttestKitHeaderNames.keyID: .value(keyID), AttestKitHeaderNames.assertion: .value("AAEC"),
                    AttestKitHeaderNames.timestamp: .value("1"), AttestKitHeaderNames.challenge: .value("c"),
                ], "invalid_freshness", .malformed
            ),
            (
                [
                    AttestKitHeaderNames.keyID: .value(keyID), AttestKitHeaderNames.assertion: .value("AAEC"),
                    AttestKitHeaderNames.timestamp: .value("-1"),
                ], "invalid_freshness", .malformed
            ),
            (
                [
                    AttestKitHeaderNames.keyID: .value("short"), AttestKitHeaderNames.assertion: .value("AAEC"),
                    AttestKitHeaderNames.timestamp: .value("1"),
                ], "key_id_malformed", .malformed
            ),
        ] as [([String: AssertionHeaders.Lookup], String, FlowError.Kind)])
    func headerRefusals(headers: [String: AssertionHeaders.Lookup], code: String, kind: FlowError.Kind) {
        let error = #expect(throws: FlowError.self) { try AssertionHeaders(lookup: Self.lookup(headers)) }
        #expect(error?.code.rawValue == code)
        #expect(error?.kind == kind)
    }

    @Test("client data in AttestKit's format must be canonical")
    func notCanonical() {
        let error = #expect(throws: FlowError.self) {
            try AssertionBinding(clientData: Array("attestkit-assertion-v1\nGET".utf8), challengeID: nil)
        }
        #expect(error?.code == .clientDataMalformed)
    }

    @Test("the caller's own client data: vouched, or the challenge beside it")
    func opaque() throws {
        let opaque = try AssertionBinding(clientData: Array("my own scheme".utf8), challengeID: nil)
        #expect(opaque.freshness == .vouchedByCaller)
        #expect(opaque.clientData == .clientData(Array("my own scheme".utf8)))
    }

    @Test("a binding that names a challenge of another service is refused")
    func foreignChallenge() {
        let error = #expect(throws: FlowError.self) {
            try AssertionBinding(method: "GET", target: "/", body: [UInt8](), freshness: .challenge("nope"))
        }
        #expect(error?.code == .invalidFreshness)
        #expect(error?.kind == .malformed)
    }

    @Test("a request binding's own errors keep their codes")
    func bindingCodes() {
        let error = #expect(throws: FlowError.self) {
            try AssertionBinding(method: "G E T", target: "/", body: [UInt8](), freshness: .timestamp(milliseconds: 1))
        }
        #expect(error?.code.rawValue == "invalid_method")
        #expect(error?.kind == .malformed)
    }
}
