import AttestKitFlows
import HTTPTypes

/// Looks the AttestKit headers (`AttestKitHeaderNames`) up in Hummingbird's fields.
enum AttestKitHeaders {
    /// The value of the one field named `name` (case-insensitive) in `fields`.
    /// - Returns: `.absent` when absent, `.repeated` when sent more than once or joined with commas (ambiguous,
    ///   refused): ``AssertionHeaders/Lookup/init(values:)``.
    static func value(_ name: String, in fields: HTTPFields) -> AssertionHeaders.Lookup {
        let wanted = name.lowercased()
        return AssertionHeaders.Lookup(values: fields.lazy.filter { $0.name.canonicalName == wanted }.map(\.value))
    }
}
