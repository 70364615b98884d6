extension FlowError.Code {
    /// An app key that is not the DER SubjectPublicKeyInfo of a P-256 public key (`app_key_malformed`).
    public static let appKeyMalformed = FlowError.Code("app_key_malformed")
    /// An app key other than the one a key attestation bound to the key, or a key no app key is bound to
    /// (`app_key_mismatch`).
    public static let appKeyMismatch = FlowError.Code("app_key_mismatch")
    /// The service CA of key attestation cannot be used: unreadable files, a key that does not match the
    /// certificate, a certificate that is not a CA (`key_attestation_ca_invalid`).
    public static let keyAttestationCAInvalid = FlowError.Code("key_attestation_ca_invalid")
}

extension FlowError {
    /// 400 `app_key_malformed`, for comparisons.
    public static let appKeyMalformed = FlowError(
        .appKeyMalformed, .malformed, "appKey: is not the DER SubjectPublicKeyInfo of a P-256 public key")
    /// 403 `app_key_mismatch`, for comparisons.
    public static let appKeyMismatch = FlowError(
        .appKeyMismatch, .refused, "the app key is not the one bound to this key by its key attestation")

    /// `key_attestation_ca_invalid` (not configured), with the reason and the part of the CA it concerns.
    static func keyAttestationCAInvalid(_ reason: String, _ problem: AppKeyAuthority.Problem) -> FlowError {
        FlowError(
            .keyAttestationCAInvalid, .notConfigured, "the key attestation CA cannot be used: \(reason)",
            underlying: problem)
    }
}
