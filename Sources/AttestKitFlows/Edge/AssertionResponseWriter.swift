package import AttestKitWire

/// Writes the answer of `POST /v1/assertions/verify` without Foundation's `JSONEncoder`, byte for byte as
/// ``WireJSON`` writes it (keys sorted, slashes not escaped, no `riskMetric` when there is none), on the service's
/// hottest route.
///
/// Its strings (the key id's Base64, the environment, the risk status, the freshness kind, an iOS 27 bundle version)
/// are written as they are
/// when they hold printable ASCII without a quote or a backslash, which is all they ever hold; any other string makes
/// it give up and return `nil`, and the answer goes to `JSONEncoder`. A test compares its bytes with
/// ``WireJSON/encode(_:)`` over every field's shapes.
package enum AssertionResponseWriter {
    /// The JSON of `response`, or `nil` when a string needs escaping.
    package static func write(_ response: AssertionResponse) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(224)
        out.append(UInt8(ascii: "{"))
        // Keys in order, as WireJSON sorts them: the iOS 27 bundle version comes first.
        if let version = response.bundleVersion {
            guard append(#""bundleVersion":"#, version, to: &out) else { return nil }
            out.append(UInt8(ascii: ","))
        }
        out += Array(#""counter":"#.utf8)
        out += Array(String(response.counter).utf8)
        guard append(#","environment":"#, response.environment, to: &out),
            append(#","freshness":"#, response.freshness.rawValue, to: &out),
            append(#","keyId":"#, response.keyId, to: &out)
        else { return nil }
        if let metric = response.riskMetric {
            out += Array(#","riskMetric":"#.utf8)
            out += Array(String(metric).utf8)
        }
        guard append(#","riskStatus":"#, response.riskStatus, to: &out) else { return nil }
        out += Array((response.stepUp ? #","stepUp":true"# : #","stepUp":false"#).utf8)
        if let category = response.validationCategory {
            out += Array(#","validationCategory":"#.utf8)
            out += Array(String(category).utf8)
        }
        if let changed = response.validationCategoryChanged {
            out += Array(#","validationCategoryChanged":"#.utf8)
            out += Array((changed ? "true" : "false").utf8)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Appends `key` (its quotes and colon included) and `value` in quotes, or returns `false` when the value holds
    /// a byte that JSON would escape (or that is not printable ASCII).
    private static func append(_ key: String, _ value: String, to out: inout [UInt8]) -> Bool {
        out += Array(key.utf8)
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else {
                return false
            }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        return true
    }
}
