extension FlowError.Code {
    /// An attestation's client data (`clientData` of `POST /v1/attestations`) that does not begin with the bytes of
    /// the challenge it names, or holds nothing after them (`client_data_challenge_mismatch`).
    public static let clientDataChallengeMismatch = FlowError.Code("client_data_challenge_mismatch")
    /// An attestation of another app than the one its attest challenge was issued for (`challenge_app_mismatch`).
    public static let challengeAppMismatch = FlowError.Code("challenge_app_mismatch")
}

extension FlowError {
    /// 403 `client_data_challenge_mismatch`, for comparisons.
    public static let clientDataChallengeMismatch = FlowError(
        .clientDataChallengeMismatch, .refused,
        "clientData: is not the bytes of the challenge challengeId names followed by the app's")

    /// 403 `challenge_app_mismatch`: the attestation verified, for an app other than the one its challenge was
    /// issued (and the attestation ramp admitted it) for.
    public static let challengeAppMismatch = FlowError(
        .challengeAppMismatch, .refused, "the attestation is of another app than the one its challenge was issued for")
}
