public import AttestKit
import Crypto
public import Foundation
import Synchronization
public import X509

/// A software Apple for tests: its own attestation CA and receipt CA, shaped like Apple's, that sign
/// attestations, assertions (through ``SimulatedDevice``) and receipts byte for byte in Apple's formats.
///
/// > Warning: **Never configure a software Apple in production.** Anyone can run one and sign whatever they
/// > like with it. A verifier trusts it only when you pass ``trustAnchors`` explicitly:
/// > `AttestationVerifier.Configuration(appIDs:environments:trustAnchors: apple.trustAnchors)` or
/// > `ReceiptVerifier(anchor: apple.trustAnchors.receipt)`. `TrustAnchors.isApple` is `false` for these anchors,
/// > so a server can refuse them in a production environment, and the certificates' organization reads
/// > "AttestKit Testing (not Apple)".
///
/// ```swift
/// let apple = try SoftwareApple(seed: Array("my tests".utf8))       // repeatable keys, or no seed for random
/// let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
/// let keyID = device.generateKey()
/// let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: challenge)))
/// let verifier = AttestationVerifier(configuration: try .init(
///     appIDs: [appID], environments: .development, trustAnchors: apple.trustAnchors))
/// ```
///
/// Creating one costs a few P-384 signatures: create it once per test suite and share it (it is `Sendable`).
/// Everything it produces takes the time to produce it at (`at:`, default now), so tests are repeatable.
public struct SoftwareApple: Sendable, CustomStringConvertible {
    /// Validity windows of what the software Apple issues.
    public struct Configuration: Sendable, Hashable, Codable {
        /// How far a credential certificate's notBefore lies before its issuance (Apple: one day).
        public var leafValidityBefore: TimeInterval
        /// How far a credential certificate's notAfter lies after its issuance (Apple: two days).
        public var leafValidityAfter: TimeInterval
        /// How far every CA certificate's notBefore lies before the software Apple's creation.
        public var caValidityBefore: TimeInterval
        /// How far every CA certificate's notAfter lies after the software Apple's creation.
        public var caValidityAfter: TimeInterval

        /// Creates a configuration; the defaults are Apple's leaf lifetime and CAs valid from a year before
        /// creation to twenty years after.
        public init(
            leafValidityBefore: TimeInterval = 86_400,
            leafValidityAfter: TimeInterval = 2 * 86_400,
            caValidityBefore: TimeInterval = 365 * 86_400,
            caValidityAfter: TimeInterval = 20 * 365 * 86_400
        ) {
            self.leafValidityBefore = leafValidityBefore
            self.leafValidityAfter = leafValidityAfter
            self.caValidityBefore = caValidityBefore
            self.caValidityAfter = caValidityAfter
        }
    }

    /// The organization name of every certificate the software Apple issues.
    public static let organization = "AttestKit Testing (not Apple)"

    /// The validity windows in use.
    public let configuration: Configuration
    /// The roots a verifier must be given to accept this software Apple's objects. The only way to trust it.
    public let trustAnchors: TrustAnchors

    let attestation: AttestationHierarchy
    let receipts: ReceiptHierarchy
    /// The seed the keys were derived from, if any; it also derives the strangers'.
    let seed: [UInt8]?
    private let strangers: StrangerCache

    /// Creates a software Apple with fresh CAs.
    ///
    /// - Parameters:
    ///   - seed: When given, every CA key is derived from it (SHA-512), so the same seed gives the same keys and
    ///     the same roots' public keys; signatures still differ between runs. `nil` draws random keys.
    ///   - configuration: Validity windows.
    ///   - time: The creation time; the CA certificates' validity windows are relative to it.
    /// - Throws: ``SoftwareAppleError/Code/signingFailed`` if a certificate cannot be built.
    public init(seed: [UInt8]? = nil, configuration: Configuration = Configuration(), at time: Date = Date())
        throws(SoftwareAppleError)
    {
        let validity = Self.caValidity(configuration, at: time)
        try self.init(
            configuration: configuration,
            attestation: AttestationHierarchy(seed: seed, label: "apple", validity: validity),
            receipts: ReceiptHierarchy(seed: seed, label: "apple", validity: validity),
            seed: seed)
    }

    /// Assembles a software Apple from its hierarchies (new or restored from a state file).
    init(
        configuration: Configuration, attestation: AttestationHierarchy, receipts: ReceiptHierarchy, seed: [UInt8]?
    ) throws(SoftwareAppleError) {
        self.configuration = configuration
        self.attestation = attestation
        self.receipts = receipts
        self.seed = seed
        self.strangers = StrangerCache()
        do {
            self.trustAnchors = TrustAnchors(
                attestation: try TrustAnchor(certificate: attestation.root.certificate),
                receipt: try TrustAnchor(certificate: receipts.root.certificate))
        } catch {
            throw SoftwareAppleError(.invalidState, "the roots cannot be trust anchors: \(error)")
        }
    }

    /// The attestation root (stands for Apple App Attestation Root CA).
    public var attestationRoot: Certificate { attestation.root.certificate }
    /// The attestation CA that issues credential certificates (stands for Apple App Attestation CA 1).
    public var attestationIntermediate: Certificate { attestation.intermediate.certificate }
    /// The receipt root (stands for Apple Root CA - G3).
    public var receiptRoot: Certificate { receipts.root.certificate }
    /// The receipt CA (stands for Apple Application Integration CA 5 - G1).
    public var receiptIntermediate: Certificate { receipts.intermediate.certificate }
    /// The receipt signing certificate (stands for Application Attestation Fraud Receipt Signing).
    public var receiptSigner: Certificate { receipts.signer.certificate }

    /// The attestation root as PEM, for `attestkit verify --attestation-root` or another verifier.
    public var attestationRootPEM: String { Self.pem(attestation.root.der) }
    /// The receipt root as PEM, for `attestkit verify --receipt-root` or another verifier.
    public var receiptRootPEM: String { Self.pem(receipts.root.der) }

    /// The roots' SHA-256 fingerprints; never key material.
    public var description: String {
        "SoftwareApple(attestationRoot: \(Hex.encode(trustAnchors.attestation.sha256)), "
            + "receiptRoot: \(Hex.encode(trustAnchors.receipt.sha256)))"
    }

    /// A PEM `CERTIFICATE` block.
    static func pem(_ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n"
    }

    static func caValidity(_ configuration: Configuration, at time: Date) -> ClosedRange<Date> {
        let start = time.addingTimeInterval(-abs(configuration.caValidityBefore))
        return start...max(start, time.addingTimeInterval(abs(configuration.caValidityAfter)))
    }
}

// MARK: - Issuing, for simulated devices

extension SoftwareApple {
    /// The attestation and receipt hierarchies that sign: this software Apple's, or a stranger's.
    func hierarchies(stranger: Bool) throws(SoftwareAppleError) -> (AttestationHierarchy, ReceiptHierarchy) {
        guard stranger else { return (attestation, receipts) }
        return try strangers.get { () throws(SoftwareAppleError) in
            let validity = try attestation.root.certificate.validityRange()
            return (
                try AttestationHierarchy(seed: seed, label: "stranger", validity: validity),
                try ReceiptHierarchy(seed: seed, label: "stranger", validity: validity)
            )
        }
    }

    /// The credential certificate's validity window for an issuance at `time`, shifted by a certificate fault.
    func leafValidity(issuedAt time: Date, fault: SoftwareAppleFault?) -> ClosedRange<Date> {
        let before = abs(configuration.leafValidityBefore)
        let after = abs(configuration.leafValidityAfter)
        let hour: TimeInterval = 3_600
        switch fault {
        case .expiredLeaf:
            return time.addingTimeInterval(-(before + after + hour))...time.addingTimeInterval(-hour)
        case .notYetValidLeaf:
            return time.addingTimeInterval(hour)...time.addingTimeInterval(before + after + hour)
        default:
            return time.addingTimeInterval(-before)...time.addingTimeInterval(after)
        }
    }
}

/// The strangers' hierarchies, built on first use (they cost P-384 signatures) and kept.
private final class StrangerCache: Sendable {
    private let value = Mutex<(AttestationHierarchy, ReceiptHierarchy)?>(nil)

    func get(
        _ make: () throws(SoftwareAppleError) -> (AttestationHierarchy, ReceiptHierarchy)
    ) throws(SoftwareAppleError) -> (AttestationHierarchy, ReceiptHierarchy) {
        if let cached = value.withLock({ $0 }) { return cached }
        let made = try make()
        return value.withLock { cached in
            if let cached { return cached }
            cached = made
            return made
        }
    }
}
