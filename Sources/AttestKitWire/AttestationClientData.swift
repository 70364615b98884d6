import Crypto

/// The client data of an attestation that carries bytes of the app's own beside the service's challenge (a user id,
/// a session, a nonce of the app's), for `POST /v1/attestations` with `clientData`.
///
/// The canonical form is the challenge's bytes exactly as the service issued them (the decoded `challenge` field of
/// the `ChallengeResponse`, 32 bytes from this service) immediately followed by the app's bytes, nothing between,
/// before or after:
///
/// ```text
/// clientData = challenge (32 bytes) ‖ appData (1 or more bytes), at most maximumLength bytes in all
/// ```
///
/// The app passes SHA-256 of these bytes (``clientDataHash``) to `DCAppAttestService.attestKey(_:clientDataHash:)`
/// and sends them, Base64, as the request's `clientData`. The service checks that they begin with the challenge it
/// consumed (in constant time), verifies the attestation with SHA-256 of them, and answers the app's bytes as the key
/// record's `appData`. Without app bytes, send no `clientData` at all (the plain attestation over the challenge).
public struct AttestationClientData: Sendable, Hashable {
    /// The most bytes of client data accepted: the challenge and the app's bytes together (16 KiB).
    public static let maximumLength = 16 * 1024
    /// The fewest challenge bytes a service issues (this service issues exactly so many).
    public static let minimumChallengeLength = 32

    /// The challenge's bytes, as the service issued them.
    public let challenge: [UInt8]
    /// The app's own bytes, after the challenge.
    public let appData: [UInt8]

    /// Binds the app's bytes to a challenge.
    ///
    /// - Parameters:
    ///   - challenge: The challenge's bytes, decoded from the `challenge` field of the challenge answer.
    ///   - appData: The app's bytes: at least one, at most ``maximumLength`` minus the challenge's length.
    /// - Throws: ``RequestBindingError``: `invalid_freshness` for a challenge shorter than
    ///   ``minimumChallengeLength``; `client_data_malformed` for no app bytes or client data longer than
    ///   ``maximumLength``.
    public init(challenge: some Collection<UInt8>, appData: some Collection<UInt8>) throws(RequestBindingError) {
        guard challenge.count >= Self.minimumChallengeLength, challenge.count < Self.maximumLength else {
            throw RequestBindingError(.invalidFreshness)
        }
        guard !appData.isEmpty, appData.count <= Self.maximumLength - challenge.count else {
            throw RequestBindingError(.malformed)
        }
        self.challenge = Array(challenge)
        self.appData = Array(appData)
    }

    /// The client data bytes: the challenge, then the app's bytes.
    public var clientData: [UInt8] { challenge + appData }

    /// SHA-256 of ``clientData``: what the app passes to `attestKey` as `clientDataHash`.
    public var clientDataHash: [UInt8] { Array(SHA256.hash(data: clientData)) }
}
