import AttestKitFlows
import HTTPTypes

/// The request headers an app sends with an assertion-protected request.
///
/// - `X-AttestKit-Key-Id`: the key identifier, Base64.
/// - `X-AttestKit-Assertion`: the assertion object, Base64.
/// - `X-AttestKit-Challenge`: the challenge id the client data names, or
/// - `X-AttestKit-Timestamp`: the Unix milliseconds the client data names.
public enum AttestKitHeaders {
    /// `X-AttestKit-Key-Id`.
    public static let keyID = AssertionHeaders.keyIDName
    /// `X-AttestKit-Assertion`.
    public static let assertion = AssertionHeaders.assertionName
    /// `X-AttestKit-Challenge`.
    public static let challenge = AssertionHeaders.challengeName
    /// `X-AttestKit-Timestamp`.
    public static let timestamp = AssertionHeaders.timestampName

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
