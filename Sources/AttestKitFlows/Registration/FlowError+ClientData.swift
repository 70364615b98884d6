extension FlowError.Code {
    /// An attestation's client data (`clientData` of `POST /v1/attestations`) that does not begin with the bytes of
    /// the challenge it names, or holds nothing after them (`client_data_challenge_mismatch`).
    public static let clientDataChallengeMismatch = FlowError.Code("client_data_challenge_mismatch")
}

extension FlowError {
    /// 403 `client_data_challenge_mismatch`, for comparisons.
    public static let clientDataChallengeMismatch = FlowError(
        .clientDataChallengeMismatch, .refused,
        "clientData: is not the bytes of the challenge challengeId names followed by the app's")
}
