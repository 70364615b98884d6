public import AttestKit

/// A deliberate defect the software Apple or a simulated device builds into an object, so that a backend can
/// test that it rejects it. Each fault names the ``expectedCode`` (and so the check) a correct verifier reports.
///
/// ```swift
/// let object = try device.attestKey(keyID, clientDataHash: hash, fault: .expiredLeaf, at: now)
/// // AttestationVerifier throws AttestKitError.certificateExpired
/// ```
///
/// The raw value is stable: `attestkit simulate … --fault NAME` uses it.
public enum SoftwareAppleFault: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// The credential certificate expired an hour before the attestation time.
    case expiredLeaf
    /// The credential certificate becomes valid an hour after the attestation time.
    case notYetValidLeaf
    /// The key was attested in the other environment than the device's (AAGUID and receipt field 7).
    case wrongEnvironment
    /// The rpIdHash (and receipt App ID) is of another app: `TEAMID.bundle.other`.
    case wrongAppID
    /// The attestation's sign count is 1 instead of 0.
    case counterNotZero
    /// The assertion repeats the key's previous counter instead of advancing it.
    case reusedCounter
    /// The certificate's nonce binds another challenge than the one the object carries.
    case nonceOfAnotherChallenge
    /// The credential certificate is issued by a stranger CA with the same names but other keys.
    case strangerCA
    /// The embedded or refreshed receipt attests another key.
    case receiptForAnotherKey
    /// The embedded receipt was made for another attestation of the key: its field 4 names another client data
    /// hash.
    case receiptOfAnotherAttestation
    /// The receipt is signed by a stranger receipt hierarchy with the same names but other keys.
    case strangerReceiptSigner
    /// The authenticator data's credential public key (COSE) is another key than the certified one; its credential
    /// id is still the key identifier.
    case credentialKeyOfAnotherKey

    /// The kinds of object a fault can be built into.
    public enum Target: String, Sendable, Hashable, CaseIterable, Codable {
        /// `attestKey`'s attestation object (and its embedded receipt).
        case attestation
        /// `generateAssertion`'s assertion.
        case assertion
        /// A receipt from ``SoftwareApple/refresh(_:riskMetric:fault:at:)``.
        case receipt
    }

    /// The objects this fault applies to.
    public var targets: Set<Target> {
        switch self {
        case .expiredLeaf, .notYetValidLeaf, .wrongEnvironment, .counterNotZero, .nonceOfAnotherChallenge, .strangerCA,
            .receiptOfAnotherAttestation, .credentialKeyOfAnotherKey:
            [.attestation]
        case .wrongAppID: [.attestation, .assertion]
        case .reusedCounter: [.assertion]
        case .receiptForAnotherKey, .strangerReceiptSigner: [.attestation, .receipt]
        }
    }

    /// The error code a correct verifier reports for this fault (its `AttestKitError.Code.check` is
    /// the category).
    public var expectedCode: AttestKitError.Code {
        switch self {
        case .expiredLeaf: .certificateExpired
        case .notYetValidLeaf: .certificateNotYetValid
        case .wrongEnvironment: .environmentMismatch
        case .wrongAppID: .appIdMismatch
        case .counterNotZero: .counterNotZero
        case .reusedCounter: .counterNotIncreasing
        case .nonceOfAnotherChallenge: .nonceMismatch
        case .strangerCA: .certificateUntrusted
        case .receiptForAnotherKey: .receiptKeyMismatch
        case .receiptOfAnotherAttestation: .receiptClientHashMismatch
        case .strangerReceiptSigner: .receiptCertificateUntrusted
        case .credentialKeyOfAnotherKey: .credentialIdMismatch
        }
    }

    /// The check category a correct verifier reports, e.g. `certificate` or `receipt`.
    public var expectedCheck: AttestKitError.Check { expectedCode.check }

    /// The stable name, as the command line takes it.
    public var description: String { rawValue }
}
