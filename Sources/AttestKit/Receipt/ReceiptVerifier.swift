public import Foundation
import Crypto
import SwiftASN1
import X509

/// Verifies App Attest receipts: the CMS signature and its signer chain up to Apple Root CA - G3 through Apple's
/// receipt CA, then the payload against the App ID, key and expectations of the caller.
///
/// The checks run in this order, and the first failure is thrown:
/// 1. the container parses, and the signature verifies under the P-256 key of the signer certificate (picked by
///    the signer identifier), over the raw content or, when signed attributes are present, over them or else
///    over the raw content (Apple's 2020 receipts); a messageDigest attribute must equal SHA-256 of the content;
/// 2. the payload parses (``Receipt``);
/// 3. the signer certificate chains through an embedded intermediate to the pinned anchor **at the receipt's
///    creation time** (field 12, which the signature covers), with ``leeway`` on every validity window (the
///    embedded copy of the root is ignored). Apple rotates the signing certificate yearly while receipts live
///    90 days and may be verified long after they were signed (a recorded verification replayed, a stored receipt
///    checked again), so the signer is judged at the moment it signed, as for any signature with a trusted signing
///    time. Apple Root CA - G3 also certifies, through other Apple CAs, keys that developers hold, so the
///    intermediate must carry the extension that marks Apple's receipt CA (1.2.840.113635.100.6.2.3) and the signer
///    the one that marks Apple's receipt signer (1.2.840.113635.100.12.15), or the receipt fails with
///    ``AttestKitError/Code/receiptSignerNotAuthorized``;
/// 4. its App ID is the expected one;
/// 5. its attested certificate holds the key named by the key identifier;
/// 6. its type is the expected one, if one is given;
/// 7. its environment field, when present, matches the expected environment, if one is given;
/// 8. its creation time is not after the verification time (with leeway), whatever the maximum age: nobody
///    can have received a receipt Apple has not made yet, so such a receipt is forged or the clock is wrong;
/// 9. when a maximum age is given, its creation time is not older than the maximum age (with leeway): this is how
///    a fresh receipt is told from a stored one.
///
/// A verification costs one P-256 signature check (the content; two for 2020 receipts with signed attributes)
/// plus parsing: the signer certificate, which Apple reuses for a year, and the intermediate are verified once
/// per process, markers included (their validity windows on every call), and the certificates Apple embeds in
/// every receipt are parsed once.
public struct ReceiptVerifier: Sendable {
    /// Seconds of clock skew tolerated on certificate validity windows and on the creation time.
    public let leeway: TimeInterval
    private let chain: ChainValidator

    /// Creates a verifier for receipts signed under `anchor`.
    ///
    /// - Parameters:
    ///   - anchor: The pinned root: ``TrustAnchor/appleRootCAG3()`` for Apple's receipts, or a test CA (whose
    ///     receipt CA and signer carry Apple's marker extensions, as the software Apple's do).
    ///   - leeway: Seconds of clock skew tolerated; 60 by default. A negative, NaN or infinite leeway counts as 0.
    public init(anchor: TrustAnchor, leeway: TimeInterval = 60) {
        self.leeway = leeway.asLeeway
        self.chain = ChainValidator(anchor: anchor, codes: .receipt, markers: .receipt, cachesLeaves: true)
    }

    /// Creates a verifier for Apple's receipts, anchored at the pinned Apple Root CA - G3.
    ///
    /// - Parameter leeway: Seconds of clock skew tolerated; 60 by default. A negative, NaN or infinite leeway counts
    ///   as 0.
    /// - Throws: ``AttestKitError/Code/trustAnchorPinMismatch`` if the embedded root does not match its pin.
    public init(leeway: TimeInterval = 60) throws(AttestKitError) {
        self.init(anchor: try TrustAnchor.appleRootCAG3(), leeway: leeway)
    }

    /// Verifies a receipt and returns its payload.
    ///
    /// - Parameters:
    ///   - bytes: The receipt as received (BER or DER), at most 64 KiB.
    ///   - appID: The App ID the receipt must name.
    ///   - keyID: The key identifier the receipt's attested certificate must hold.
    ///   - expectedType: `.attest` for a receipt taken from an attestation, `.receipt` for one returned by
    ///     Apple's exchange endpoint; `nil` accepts both.
    ///   - environment: The environment the receipt must belong to, when it names one; `nil` accepts both.
    ///   - maximumAge: How old the receipt may be at `time`, e.g. 300 s for a fresh one (Apple's advice).
    ///     `nil` (or infinity) sets no age limit, for receipts re-verified from storage; a receipt created after
    ///     `time` is refused either way. A NaN or negative age refuses every receipt older than the leeway.
    ///   - time: The moment to verify at: the creation time is compared with it.
    /// - Returns: The verified payload.
    /// - Throws: ``AttestKitError`` with a `receipt*` code (or ``AttestKitError/Code/inputTooLarge`` or
    ///   ``AttestKitError/Code/environmentMismatch``); time failures carry ``AttestKitError/secondsOutside``.
    public func verify(
        _ bytes: some Collection<UInt8>,
        appID: AppID,
        keyID: KeyID,
        expectedType: Receipt.ReceiptType? = nil,
        environment: AppAttestEnvironment? = nil,
        maximumAge: TimeInterval?,
        at time: Date = Date()
    ) async throws(AttestKitError) -> Receipt {
        try await verify(
            bytes, appID: appID, keyID: keyID, attestedCertificateDER: nil, expectedType: expectedType,
            environment: environment, maximumAge: maximumAge, at: time)
    }

    /// Verifies a receipt, taking a shortcut for the key check when the caller already trusts a certificate.
    ///
    /// - Parameters:
    ///   - attestedCertificateDER: The DER of a credential certificate already verified to hold the key
    ///     `keyID` names (the leaf of the attestation that carried this receipt). When the receipt's field 3 is
    ///     exactly these bytes, the key check needs no certificate parsing. Otherwise it runs in full.
    package func verify(
        _ bytes: some Collection<UInt8>,
        appID: AppID,
        keyID: KeyID,
        attestedCertificateDER: [UInt8]?,
        expectedType: Receipt.ReceiptType? = nil,
        environment: AppAttestEnvironment? = nil,
        maximumAge: TimeInterval?,
        at time: Date = Date()
    ) async throws(AttestKitError) -> Receipt {
        guard bytes.count <= ReceiptContainer.maximumSize else {
            throw AttestKitError(.inputTooLarge, "a receipt is at most \(ReceiptContainer.maximumSize) bytes")
        }
        let bytes = Array(bytes)
        let container = try ReceiptContainer(berEncoded: bytes)
        _ = try container.verifySignature()
        let receipt = try Receipt(payload: container.content, bytes: bytes)
        try await chain.validate(
            leaf: container.signer, candidates: container.certificates, at: receipt.creationTime, leeway: leeway)

        // Byte for byte: `String ==` takes canonically equivalent texts as equal, and those are other App IDs (another
        // rpIdHash).
        guard receipt.appID.utf8.elementsEqual(appID.description.utf8) else {
            throw AttestKitError(.receiptAppIdMismatch, "the receipt is for another App ID")
        }
        if attestedCertificateDER != receipt.attestedCertificateDER {
            try Self.checkKey(of: receipt.attestedCertificateDER, is: keyID)
        }
        if let expectedType, receipt.type != expectedType {
            throw AttestKitError(
                .receiptTypeUnexpected, "expected a \(expectedType.rawValue) receipt, got \(receipt.type.rawValue)")
        }
        if let environment, let named = receipt.environment, named != environment.receiptName {
            throw AttestKitError(
                .environmentMismatch, "the receipt is from \(named), expected \(environment.receiptName)")
        }
        try checkAge(of: receipt.creationTime, maximumAge: maximumAge, at: time)
        return receipt
    }

    /// SHA-256 of the X9.63 public key of the certificate in field 3 must be `keyID`.
    private static func checkKey(of certificateDER: [UInt8], is keyID: KeyID) throws(AttestKitError) {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: certificateDER)
        } catch {
            throw AttestKitError(.receiptMalformed, "the receipt's attested certificate does not parse")
        }
        guard let key = P256.Signing.PublicKey(certificate.publicKey), KeyID(publicKey: key) == keyID else {
            throw AttestKitError(.receiptKeyMismatch, "the receipt attests another key")
        }
    }

    /// The creation time is not after `time` (always) nor older than `maximumAge` (when given), with leeway. Written
    /// so that a NaN fails: a NaN time or maximum age refuses the receipt (an infinite maximum age is no limit).
    private func checkAge(of creationTime: Date, maximumAge: TimeInterval?, at time: Date) throws(AttestKitError) {
        let ahead = creationTime.timeIntervalSince(time) - leeway
        if !(ahead <= 0) {
            let seconds = AttestKitError.formatted(seconds: ahead)
            throw AttestKitError(
                .receiptFromFuture, "the receipt was created \(seconds) s after the verification time",
                secondsOutside: ahead)
        }
        guard let maximumAge else { return }
        let late = time.timeIntervalSince(creationTime) - maximumAge - leeway
        if !(late <= 0) {
            let seconds = AttestKitError.formatted(seconds: late)
            throw AttestKitError(
                .receiptTooOld, "the receipt is \(seconds) s older than the maximum age", secondsOutside: late)
        }
    }
}
