public import AttestKit
public import AttestKitWire

/// The assertion an app sends in request headers, parsed the same way by every middleware.
///
/// - `X-AttestKit-Key-Id`: the key identifier, Base64.
/// - `X-AttestKit-Assertion`: the assertion object, Base64.
/// - `X-AttestKit-Challenge`: the challenge id the client data names, or
/// - `X-AttestKit-Timestamp`: the Unix milliseconds the client data names.
///
/// The names are `AttestKitHeaderNames`. A framework edge looks each header up (``Lookup``) and hands the lookups here; the flows decide.
public struct AssertionHeaders: Sendable, Hashable {
    private static let keyIDName = AttestKitHeaderNames.keyID
    private static let assertionName = AttestKitHeaderNames.assertion
    private static let challengeName = AttestKitHeaderNames.challenge
    private static let timestampName = AttestKitHeaderNames.timestamp

    /// Whether the request carries an App Attest assertion (its key id or assertion header, even malformed or
    /// repeated): then it is judged as one, and a fallback token it also carries is not looked at.
    public static func presented(lookup: (String) -> Lookup) -> Bool {
        lookup(keyIDName) != .absent || lookup(assertionName) != .absent
    }

    /// One header as the request carries it.
    public enum Lookup: Sendable, Hashable {
        /// Not sent.
        case absent
        /// Sent once, with this value.
        case value(String)
        /// Sent more than once: ambiguous, refused.
        case repeated
    }

    /// The key that signed.
    public let keyID: KeyID
    /// The assertion object.
    public let assertion: [UInt8]
    /// The freshness the client data names: a challenge or a timestamp.
    public let freshness: Freshness

    /// Parses the headers `lookup` finds (by the names above).
    /// - Throws: `assertion_required` (unauthenticated) without the key, assertion or freshness headers;
    ///   `header_repeated` (any AttestKit header sent twice, the fallback tokens' too), `invalid_freshness`,
    ///   `key_id_malformed`, `invalid_field` (malformed).
    public init(lookup: (String) -> Lookup) throws(FlowError) {
        let keyText = lookup(Self.keyIDName)
        let assertionText = lookup(Self.assertionName)
        guard case .value(let key) = keyText, case .value(let assertion) = assertionText else {
            if keyText == .repeated || assertionText == .repeated { throw Self.repeated }
            throw FlowError(
                .assertionRequired, .unauthenticated,
                "this route needs \(Self.keyIDName) and \(Self.assertionName) headers")
        }
        let (challenge, timestamp) = (lookup(Self.challengeName), lookup(Self.timestampName))
        // The fallback tokens are not looked at beside an assertion, but a repeated header is refused wherever it is.
        let fallbacks = [lookup(AttestKitHeaderNames.deviceToken), lookup(AttestKitHeaderNames.debugToken)]
        if challenge == .repeated || timestamp == .repeated || fallbacks.contains(.repeated) { throw Self.repeated }
        switch (challenge, timestamp) {
        case (.value(let id), .absent):
            freshness = .challenge(id)
        case (.absent, .value(let text)):
            guard text.utf8.count <= 16, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let milliseconds = Int64(text)
            else {
                throw FlowError(.invalidFreshness, .malformed, "\(Self.timestampName) is Unix milliseconds")
            }
            freshness = .timestamp(milliseconds: milliseconds)
        case (.absent, .absent):
            throw FlowError(
                .assertionRequired, .unauthenticated,
                "this route needs \(Self.challengeName) or \(Self.timestampName)")
        default:
            throw FlowError(
                .invalidFreshness, .malformed,
                "send exactly one of \(Self.challengeName) and \(Self.timestampName)")
        }
        self.keyID = try Field.keyID(key)
        self.assertion = try Field.bytes(assertion, Self.assertionName, maximum: Field.maximumAssertionLength)
    }

    private static var repeated: FlowError {
        FlowError(.headerRepeated, .malformed, "each AttestKit header is sent once")
    }
}

extension AssertionHeaders.Lookup {
    /// A header whose field lines carry `values`: absent without one, repeated with more than one, and repeated too
    /// for one value holding a comma. No AttestKit header's value has a comma (Base64, a challenge id, digits, a
    /// debug token of a comma-separated list), and a proxy, a WSGI server or Node joins the lines of a header sent
    /// twice into one, with commas: such a value is the repeated header it was.
    /// Reads `values` up to the second at most (an edge passes its fields lazily, filtered by name).
    public init(values: some Sequence<String>) {
        var iterator = values.makeIterator()
        guard let first = iterator.next() else {
            self = .absent
            return
        }
        self = iterator.next() == nil && !first.utf8.contains(UInt8(ascii: ",")) ? .value(first) : .repeated
    }

    /// The value of a header sent once, `nil` when absent.
    /// - Throws: `header_repeated` (malformed) when sent more than once.
    public func single() throws(FlowError) -> String? {
        switch self {
        case .absent: return nil
        case .value(let text): return text
        case .repeated: throw FlowError(.headerRepeated, .malformed, "each AttestKit header is sent once")
        }
    }
}
