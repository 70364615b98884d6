public import Foundation
import Crypto
import SwiftASN1
import X509

/// Verifies App Attest attestation objects: Apple's nine steps, the embedded receipt (required by default),
/// an explicit environment policy, then the deployment's own rules (an ``AttestationPolicy``), in one call.
///
/// ```swift
/// let verifier = try AttestationVerifier(configuration: .init(
///     appIDs: [AppID("ABCDE12345.com.example.app")], environments: .production))
/// let result = try await verifier.verify(attestationBytes, keyID: KeyID(string: keyIdFromApp),
///                                        clientData: .challenge(challengeBytes))
/// store(result.publicKey, counter: 0, receipt: result.receipt)
/// ```
///
/// Cheap, structural checks run before the certificate chain's signatures, so malformed or mismatched
/// objects cost no signature verification. The intermediate certificate's own verification is cached per
/// process; an attestation costs one P-384 signature check (the credential certificate) plus the receipt's
/// P-256 checks.
public struct AttestationVerifier: Sendable {
    /// How the embedded receipt is treated.
    ///
    /// Apple puts a receipt in every attestation, and nothing in the attestation covers it: the nonce binds the
    /// authenticator data and the client data only. Anyone relaying a genuine attestation can therefore remove
    /// or empty its receipt, and a key registered without one never has a fraud signal. ``require`` is the
    /// default; the other cases are explicit opt-outs.
    public enum ReceiptPolicy: Sendable, Hashable {
        /// Verify the receipt when the object carries one; accept objects without one or with an empty one.
        /// An opt-out: the key of such an object can never be traded for a fraud risk metric.
        case verifyIfPresent
        /// Verify the receipt and reject objects without one or with an empty one
        /// (``AttestKitError/Code/receiptMissing``). The default.
        case require
        /// Neither parse nor verify the receipt. An opt-out, for objects whose receipt is checked elsewhere.
        case ignore
    }

    /// Verifier settings.
    public struct Configuration: Sendable {
        /// The App IDs (`TEAMID.bundle.id`) whose keys are accepted.
        public var appIDs: [AppID]
        /// The environments whose keys are accepted.
        public var environments: EnvironmentPolicy
        /// Clock-skew leeway, in seconds, applied to both ends of every validity window. The checks take a
        /// negative, NaN or infinite value as 0, however it was set.
        public var leeway: TimeInterval
        /// How the embedded receipt is treated.
        public var receiptPolicy: ReceiptPolicy
        /// Maximum age of the embedded receipt at verification time, or `nil` for no age limit (the one-time
        /// challenge already proves freshness). A receipt created after the verification time (plus leeway) is
        /// refused either way.
        public var receiptMaximumAge: TimeInterval?
        /// The roots to trust. Apple's pinned roots unless you pass a test CA.
        public var trustAnchors: TrustAnchors

        /// Creates a configuration.
        /// - Parameters:
        ///   - appIDs: Accepted App IDs; at least one.
        ///   - environments: Accepted environments: `.production`, `.development` or `.both`.
        ///   - leeway: Clock skew tolerated, in seconds (default 60); a negative, NaN or infinite value counts as 0.
        ///   - receiptPolicy: How the embedded receipt is treated (default ``ReceiptPolicy/require``).
        ///   - receiptMaximumAge: Maximum age of the embedded receipt (default `nil`, no age limit).
        ///   - trustAnchors: Roots to trust; `nil` means Apple's pinned roots.
        /// - Throws: ``AttestKitError/Code/trustAnchorPinMismatch`` if an embedded root fails its pin, and
        ///   ``AttestKitError/Code/appIdMalformed`` for an empty `appIDs`.
        public init(
            appIDs: [AppID],
            environments: EnvironmentPolicy,
            leeway: TimeInterval = 60,
            receiptPolicy: ReceiptPolicy = .require,
            receiptMaximumAge: TimeInterval? = nil,
            trustAnchors: TrustAnchors? = nil
        ) throws(AttestKitError) {
            guard !appIDs.isEmpty else { throw AttestKitError(.appIdMalformed, "at least one App ID is required") }
            self.appIDs = appIDs
            self.environments = environments
            self.leeway = leeway.asLeeway
            self.receiptPolicy = receiptPolicy
            self.receiptMaximumAge = receiptMaximumAge
            if let trustAnchors {
                self.trustAnchors = trustAnchors
            } else {
                self.trustAnchors = try .apple()
            }
        }
    }

    /// The settings this verifier applies.
    public let configuration: Configuration
    /// The deployment's rules beyond Apple's checks, checked by ``verify(_:keyID:clientData:at:)`` right after
    /// them (``AcceptAnyAttestation`` unless the verifier was given one).
    public let policy: any AttestationPolicy
    private let chain: ChainValidator
    private let receipts: ReceiptVerifier

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - configuration: Apple's checks: the apps, environments, receipt handling and roots.
    ///   - policy: The deployment's rules, checked after Apple's (default: every verified attestation meets it).
    public init(configuration: Configuration, policy: some AttestationPolicy = AcceptAnyAttestation()) {
        self.configuration = configuration
        self.policy = policy
        self.chain = ChainValidator(anchor: configuration.trustAnchors.attestation, codes: .attestation)
        self.receipts = ReceiptVerifier(anchor: configuration.trustAnchors.receipt, leeway: configuration.leeway)
    }

    /// Creates a verifier whose policy is built with ``AttestationPolicyBuilder``.
    ///
    /// ```swift
    /// let verifier = AttestationVerifier(configuration: configuration) {
    ///     ValidationCategoryPolicy(allowed: [2])
    ///     if let minimum = OSVersion("17.4") { MinimumOSVersionPolicy(minimum) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - configuration: Apple's checks: the apps, environments, receipt handling and roots.
    ///   - policy: The deployment's rules, checked in order after Apple's; the first refusal is thrown.
    public init(configuration: Configuration, @AttestationPolicyBuilder policy: () -> some AttestationPolicy) {
        self.init(configuration: configuration, policy: policy())
    }

    /// This verifier with `policy` checked after its own policy: how an integration adds a deployment's rules to
    /// the verifier an adopter hands it without dropping the adopter's own.
    ///
    /// - Parameter policy: The rules to check once this verifier's policy is met.
    /// - Returns: A verifier with the same configuration and both policies, this one's first.
    public func appending(_ policy: some AttestationPolicy) -> AttestationVerifier {
        AttestationVerifier(
            configuration: configuration,
            policy: AttestationPolicyBuilder.Sequence2(first: AnyAttestationPolicy(self.policy), second: policy))
    }

    /// Verifies an attestation object.
    ///
    /// - Parameters:
    ///   - attestation: The bytes `attestKey` returned (decode the app's Base64 first).
    ///   - keyID: The key identifier the app claims.
    ///   - clientData: The challenge (hashed with SHA-256) or the exact client data hash the app passed.
    ///   - time: The moment to verify at; certificates are valid for days, so re-verifying later needs the
    ///     original time.
    /// - Returns: The attested key and what Apple says about it.
    /// - Throws: ``AttestKitError`` with the failed check: Apple's checks first, then the verifier's ``policy``
    ///   (``AttestKitError/Check/policy``, with the failing policy's code and reason).
    public func verify(
        _ attestation: some Collection<UInt8>,
        keyID: KeyID,
        clientData: ClientDataInput,
        at time: Date = Date()
    ) async throws(AttestKitError) -> VerifiedAttestation {
        try await verify(attestation, keyID: keyID, nonceBinding: clientData, at: time)
    }

    /// Verifies an attestation, skipping the nonce check when `nonceBinding` is `nil`: only for
    /// conformance vectors whose challenge was never published ("parse-only"). Every other check, the embedded
    /// receipt's creation time against `time` included, runs exactly as in the public `verify`.
    package func verify(
        _ attestation: some Collection<UInt8>,
        keyID: KeyID,
        nonceBinding: ClientDataInput?,
        at time: Date
    ) async throws(AttestKitError) -> VerifiedAttestation {
        let object = try AttestationObject(bytes: attestation)
        let clientDataHash = try nonceBinding?.hash()
        guard object.certificates.count == 2 else {
            throw AttestKitError(
                .certificateChainLength, "x5c holds \(object.certificates.count) certificates, expected 2")
        }
        let leaf = try Self.certificate(object.certificates[0], role: "credential", cached: false)
        // The intermediate is the same for every device: parsed once per process (by exact bytes).
        let intermediate = try Self.certificate(object.certificates[1], role: "intermediate", cached: true)
        guard let publicKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw AttestKitError(.publicKeyMalformed, "the credential certificate's key is not P-256")
        }
        let authenticatorData = object.authenticatorData
        guard let credential = authenticatorData.attestedCredential else {
            throw AttestKitError(.authenticatorDataMalformed, "the authenticator data has no attested credential")
        }

        // Step 5: the certificate's key is the claimed key.
        let certifiedKeyID = KeyID(publicKey: publicKey)
        guard certifiedKeyID == keyID else {
            throw AttestKitError(.keyIdMismatch, "SHA-256 of the certified public key is not the key identifier")
        }
        // Steps 2-4: the nonce binds authenticator data and client data.
        let nonce = try AppAttestNonceExtension(certificate: leaf).nonce
        if let clientDataHash {
            var hasher = SHA256()
            hasher.update(data: authenticatorData.bytes)
            hasher.update(data: clientDataHash)
            guard ConstantTime.equal(Array(hasher.finalize()), nonce) else {
                throw AttestKitError(.nonceMismatch, "the certificate nonce is not SHA-256(authData ‖ clientDataHash)")
            }
        }
        // Step 6: the key belongs to an allowed app.
        let appID = try matchingAppID(authenticatorData.rpIDHash)
        // Step 7: a fresh key has never signed.
        guard authenticatorData.signCount == 0 else {
            throw AttestKitError(
                .counterNotZero, "an attestation's sign count must be 0, got \(authenticatorData.signCount)")
        }
        // Step 8: the environment is allowed.
        guard let environment = credential.environment else {
            throw AttestKitError(.aaguidUnknown, "the AAGUID is neither appattest nor appattestdevelop")
        }
        guard configuration.environments.allows(environment) else {
            throw AttestKitError(.environmentMismatch, configuration.environments.refusal(of: environment))
        }
        // Step 9: the credential is the key: its identifier, and the public key it carries (WebAuthn's attested
        // credential data), which must be the certified one, so that a verified result never holds two keys.
        guard ConstantTime.equal(credential.credentialID, keyID.bytes) else {
            throw AttestKitError(.credentialIdMismatch, "the credential id is not the key identifier")
        }
        guard ConstantTime.equal(credential.publicKey.x963Representation, Array(publicKey.x963Representation)) else {
            throw AttestKitError(.credentialIdMismatch, "the credential's public key is not the certified key")
        }
        // Step 1: the chain leads to the pinned root at `time`.
        try await chain.validate(leaf: leaf, candidates: [intermediate], at: time, leeway: configuration.leeway)

        let receipt = try await verifyReceipt(
            object, appID: appID, keyID: keyID, environment: environment, clientDataHash: clientDataHash, at: time)
        let verified = VerifiedAttestation(
            keyID: keyID,
            publicKey: publicKey,
            appID: appID,
            environment: environment,
            receipt: receipt,
            certificateNotBefore: leaf.notValidBefore,
            certificateNotAfter: leaf.notValidAfter,
            osVersion: Self.osVersion(of: leaf),
            keyAccessControl: AppAttestKeyAccessControl.reading(of: leaf),
            authenticatorData: authenticatorData)
        // The deployment's rules, once Apple's checks passed: a policy decides on verified facts only.
        if case .failsToMeetPolicy(let reason) = policy.check(verified) { throw reason.error() }
        return verified
    }

    /// The embedded receipt, verified, and bound to this attestation: an ATTEST receipt's field 3 is this
    /// attestation's credential certificate, byte for byte, and its field 4 the client data hash the app passed to
    /// `attestKey`, so a genuine receipt of another attestation of the same key cannot be carried into this one (the
    /// nonce covers the authenticator data and the client data, not the receipt). Field 4 alone is not enough: two
    /// attestations of one key with one challenge, one of them with an iOS 27 map spliced before the client data,
    /// have equal field 4s, and the receipt of the one without the map would vouch for the other's map.
    private func verifyReceipt(
        _ object: AttestationObject, appID: AppID, keyID: KeyID, environment: AppAttestEnvironment,
        clientDataHash: [UInt8]?, at time: Date
    ) async throws(AttestKitError) -> Receipt? {
        switch configuration.receiptPolicy {
        case .ignore:
            return nil
        case .verifyIfPresent, .require:
            guard let bytes = object.receipt else {
                if configuration.receiptPolicy == .require {
                    throw AttestKitError(.receiptMissing, "the attestation carries no receipt")
                }
                return nil
            }
            let receipt = try await receipts.verify(
                bytes, appID: appID, keyID: keyID, attestedCertificateDER: object.certificates[0],
                expectedType: .attest, environment: environment, maximumAge: configuration.receiptMaximumAge,
                at: time)
            // The certificate is public: a plain comparison.
            guard receipt.attestedCertificateDER == object.certificates[0] else {
                throw AttestKitError(
                    .receiptKeyMismatch, "the receipt was made for another attestation (another credential certificate)"
                )
            }
            if let clientDataHash, !ConstantTime.equal(receipt.clientHash, clientDataHash) {
                throw AttestKitError(
                    .receiptClientHashMismatch, "the receipt was made for another attestation of this key")
            }
            return receipt
        }
    }

    private func matchingAppID(_ rpIDHash: some Collection<UInt8>) throws(AttestKitError) -> AppID {
        var match: AppID?
        for appID in configuration.appIDs where ConstantTime.equal(appID.rpIDHash, rpIDHash) {
            match = appID
        }
        guard let match else {
            throw AttestKitError(.appIdMismatch, "rpIdHash is not SHA-256 of an allowed App ID")
        }
        return match
    }

    /// The OS version is informational: an unreadable device extension leaves it `nil` rather than failing a
    /// chain Apple signed.
    private static func osVersion(of leaf: Certificate) -> String? {
        guard let device = try? AppAttestDeviceExtension(certificate: leaf) else { return nil }
        return device.osVersion
    }

    private static func certificate(_ der: [UInt8], role: String, cached: Bool) throws(AttestKitError)
        -> Certificate
    {
        do {
            return cached
                ? try CertificateCache.shared.certificate(derEncoded: der[...]) : try Certificate(derEncoded: der)
        } catch {
            throw AttestKitError(.certificateMalformed, "the \(role) certificate does not parse")
        }
    }
}
