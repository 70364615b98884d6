import AttestKitFlows
import HTTPTypes

/// Looks the AttestKit headers (`AttestKitHeaderNames`) up in Hummingbird's fields.
enum AttestKitHeaders {
    /// The value of the one field named `name` (case-insensitive) in `fields`.
    /// - Returns: `.absent` when absent, `.repeated` when sent more than once (ambiguous, refused).
    static func value(_ name: String, in fields: HTTPFields) -> AssertionHeaders.Lookup {
        let wanted = name.lowercased()
        var found: String?
        for field in fields where field.name.canonicalName == wanted {
            if found != nil { return .repeated }
            found = field.value
        }
        return found.map(AssertionHeaders.Lookup.value) ?? .absent
    }
}
