public import AttestKit
public import AttestKitStore
public import AttestKitWire
public import Foundation

/// Emulated key attestation: registers an App Attest key with an ordinary *app key* bound to it, so that the
/// server knows the app key lives in a genuine instance of the app.
///
/// The attestation's client data is a `KeyAttestationClientData` naming the challenge id and the
/// app key; the attestation is verified as any other (nonce = SHA-256(authData ‖ SHA-256(client data))) by the
/// ``AttestationRegistrar``, which consumes the challenge once, applies the verifier's policy and stores the key with its app
/// key. With an ``AppKeyAuthority`` the result carries an X.509 certificate for the app key.
///
/// ```swift
/// let keyAttestation = KeyAttestation(registrar: registrar, authority: try AppKeyAuthority(
///     certificatePEM: caPEM, privateKeyPEM: caKeyPEM))
/// let bound = try await keyAttestation.register(
///     keyID: keyID, attestation: bytes, challengeID: challengeID, appKey: spkiDER, now: Date())
/// // Later, a message signed with an app key: is it the one bound to this App Attest key?
/// let record = try await keyAttestation.requireBoundAppKey(presentedKey, of: keyID)
/// ```
public struct KeyAttestation: Sendable {
    /// What a key attestation registered.
    public struct Registered: Sendable {
        /// The stored App Attest key, with `KeyRecord.appKey`.
        public let record: KeyRecord
        /// The app key bound to it.
        public let appKey: AppKey
        /// The certificate the ``AppKeyAuthority`` issued for the app key (DER), or `nil` without a CA.
        public let certificate: [UInt8]?
        /// The verified attestation the key was registered from.
        public let attestation: VerifiedAttestation

        /// The answer of `POST /v1/key-attestations`: the key record with the app key's thumbprint and
        /// certificate.
        public func response(policy: RiskPolicy) -> KeyAttestationResponse {
            var response = KeyRecordResponse(record, policy: policy, keyAccessControl: attestation.keyAccessControl)
            response.appKey?.certificate = certificate.map { Base64.encode($0) }
            return response
        }
    }

    /// Verifies attestations and stores keys.
    public let registrar: AttestationRegistrar
    /// The CA that certifies app keys, or `nil` for none.
    public let authority: AppKeyAuthority?

    /// What a key must still be for its certificate and bound app key to count: active, and with the
    /// configuration's `apps`, `environments` and `keys.expire-after`, as its next assertion would be.
    public let keyStanding: KeyStanding
    private let now: @Sendable () -> Date

    /// Creates the flow.
    /// - Parameters:
    ///   - registrar: Verifies attestations and stores keys.
    ///   - authority: The CA that certifies app keys, or `nil` for none.
    ///   - keyStanding: What a key must still be for what it earned to count; by default only active.
    ///   - now: The clock of ``requireBoundAppKey(_:of:)``.
    public init(
        registrar: AttestationRegistrar, authority: AppKeyAuthority? = nil, keyStanding: KeyStanding = KeyStanding(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.registrar = registrar
        self.authority = authority
        self.keyStanding = keyStanding
        self.now = now
    }

    /// Verifies `attestation` for `keyID`, made over the key attestation client data of `challengeID` and
    /// `appKey`, and registers the key with `appKey` bound to it.
    ///
    /// - Parameters:
    ///   - keyID: The App Attest key identifier the app claims.
    ///   - attestation: The attestation object `attestKey` returned.
    ///   - challengeID: The one-time challenge the client data names.
    ///   - appKey: The app key's SubjectPublicKeyInfo DER, as the request carries it (a P-256 public key).
    ///   - now: The moment to verify at.
    ///   - admit: Called with the verified app before the key is stored (a per-app budget); see
    ///     ``AttestationRegistrar/register(keyID:attestation:challengeID:now:admit:)``.
    /// - Throws: ``FlowError``: `app_key_malformed` (400) before anything else; the registrar's codes
    ///   (`challenge_*`, `nonce_mismatch` for an attestation made for another app key or challenge, ...); only once
    ///   the attestation verified, `app_key_mismatch` (403) when the key is registered with another app key and
    ///   `key_exists` (409) when it is registered; `key_attestation_ca_invalid` when the CA is not valid at `now`
    ///   (checked before the challenge is consumed: nothing is stored then).
    public func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, appKey: some Collection<UInt8>, now: Date,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> Registered {
        var generator = SystemRandomNumberGenerator()
        return try await register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: now,
            using: &generator, admit: admit)
    }

    /// ``register(keyID:attestation:challengeID:appKey:now:admit:)`` with the generator of the certificate's
    /// serial number.
    public func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, appKey: some Collection<UInt8>, now: Date,
        using generator: inout some RandomNumberGenerator,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> Registered {
        let appKey = try AppKey(request: appKey)
        // Before the challenge is consumed and the key stored: a CA that cannot issue now must not leave a
        // registered key without its certificate (the client would have to attest a new key).
        try authority?.checkValidity(at: now)
        let registered = try await registrar.register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: now, admit: admit)
        let record = registered.record
        let certificate = try authority?.issue(
            for: appKey, keyID: record.keyID, appID: record.appID, now: now, using: &generator)
        return Registered(
            record: record, appKey: appKey, certificate: certificate, attestation: registered.attestation)
    }

    /// Introspects an app key certificate for a backend (RFC 7662), as `POST /v1/tokens/introspect` with
    /// `tokenTypeHint` `app_key_certificate` does: active only if this service's CA issued it (its signature
    /// verifies), it is within its validity at `now`, and the key it names is still registered, stands
    /// (``keyStanding``: active, accepted, not unused for too long), is for the App ID the certificate names, and is
    /// bound to the certificate's app key. Otherwise
    /// `TokenIntrospectionResponse.inactive` (also without a CA: no certificate of this service exists then).
    /// - Parameters:
    ///   - der: The certificate's DER.
    ///   - now: The moment to check its validity at.
    /// - Throws: 503 `storage_unavailable` when the store cannot answer (never a guess of "active").
    public func introspect(certificate der: some Collection<UInt8>, now: Date) async throws(FlowError)
        -> TokenIntrospectionResponse
    {
        guard let authority, let issued = authority.verifiedCertificate(der, at: now) else { return .inactive }
        let record: KeyRecord?
        do throws(StoreError) {
            record = try await registrar.store.key(issued.keyID)
        } catch {
            throw FlowError(error)
        }
        guard let record, keyStanding.holds(record, at: now),
            record.appID == issued.appID, record.appKey == issued.appKey
        else { return .inactive }
        return TokenIntrospectionResponse(
            certificateOf: Base64URL.encode(issued.keyID.bytes), appID: issued.appID.description,
            environment: record.environment.rawValue,
            notBefore: Int64(issued.notValidBefore.timeIntervalSince1970.rounded(.down)),
            notAfter: Int64(issued.notValidAfter.timeIntervalSince1970.rounded(.down)),
            appKeyThumbprint: issued.appKey.thumbprint)
    }

    /// The record of `keyID` when `appKey` is the app key bound to it by its key attestation.
    /// - Throws: `app_key_malformed` (400) for a key that does not parse; `key_not_found`, and for a key that no
    ///   longer stands (``keyStanding``) `key_revoked`, `app_not_accepted`, `environment_not_accepted` or
    ///   `key_expired` (403);
    ///   `app_key_mismatch` (403) when another app key, or none, is bound to the key; `storage_unavailable`.
    public func requireBoundAppKey(_ appKey: some Collection<UInt8>, of keyID: KeyID) async throws(FlowError)
        -> KeyRecord
    {
        let presented = try AppKey(request: appKey)
        let record: KeyRecord?
        do throws(StoreError) {
            record = try await registrar.store.key(keyID)
        } catch {
            throw FlowError(error)
        }
        guard let record else { throw FlowError(StoreError.keyNotFound) }
        try keyStanding.require(record, at: now())
        guard record.appKey == presented else { throw FlowError.appKeyMismatch }
        return record
    }
}
