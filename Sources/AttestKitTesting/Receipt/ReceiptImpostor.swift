package import AttestKit
import Foundation
import SwiftASN1
import X509

/// A receipt signer that chains to the software Apple's receipt root without being its receipt signer.
///
/// Apple Root CA - G3 certifies, through other Apple CAs, keys that developers hold; a signer that merely chains to
/// it may be anyone's. Only the marker extensions of Apple's receipt CA and receipt signer tell Apple's receipts
/// apart. Each case builds one shape of such a chain under the software Apple's receipt root, so that a verifier can
/// be shown to refuse it. For AttestKit's own tests.
package enum ReceiptImpostor: String, Sendable, Hashable, CaseIterable {
    /// A signer without the signer marker, under the genuine receipt CA.
    case signerWithoutMarker
    /// A signer with the signer marker, under another CA of the root that lacks the receipt CA marker.
    case intermediateWithoutMarker
    /// Another CA of the root and a signer under it, neither with a marker: a key certified for another service.
    case noMarkers
    /// The markers swapped: the CA carries the signer's, the signer the CA's.
    case markersSwapped
    /// A signer with the signer marker, issued directly by the root with no CA between.
    case signerUnderRoot

    /// The code a correct verifier reports: the chain is genuine but not Apple's receipt signer's, or, with no CA
    /// between the signer and the root, not the receipt chain's shape at all.
    package var expectedCode: AttestKitError.Code {
        self == .signerUnderRoot ? .receiptCertificateUntrusted : .receiptSignerNotAuthorized
    }
}

extension SoftwareApple {
    /// `receipt`'s payload, unchanged, signed again by `impostor` under this software Apple's receipt root.
    ///
    /// - Throws: ``SoftwareAppleError/Code/invalidInput`` when `receipt` does not parse.
    package func resigning(_ receipt: [UInt8], as impostor: ReceiptImpostor) throws(SoftwareAppleError) -> [UInt8] {
        let payload: [UInt8]
        do {
            payload = Array(try Receipt.parseUnverified(receipt).0.content)
        } catch {
            throw SoftwareAppleError(.invalidInput, "the receipt does not parse")
        }
        return try ReceiptSigner(hierarchy: impostorHierarchy(impostor)).sign(payload)
    }

    /// `attestation` with its receipt replaced by `receipt`, or without the `receipt` key when it is `nil`: what
    /// anyone who relays an attestation can do, since the nonce does not cover the receipt.
    ///
    /// - Throws: ``SoftwareAppleError/Code/invalidInput`` when `attestation` does not parse.
    package static func replacingReceipt(
        in attestation: [UInt8], with receipt: [UInt8]?
    ) throws(SoftwareAppleError) -> [UInt8] {
        let object: AttestationObject
        do {
            object = try AttestationObject(bytes: attestation)
        } catch {
            throw SoftwareAppleError(.invalidInput, "the attestation does not parse")
        }
        return AppAttestEncoder.attestationObject(
            certificates: object.certificates, receipt: receipt, authData: object.authenticatorData.bytes)
    }

    /// The receipt hierarchy of `impostor`: this software Apple's root, then a CA and a signer it would never
    /// use for receipts (keys derived from the seed when there is one).
    func impostorHierarchy(_ impostor: ReceiptImpostor) throws(SoftwareAppleError) -> ReceiptHierarchy {
        let label = "impostor/\(impostor.rawValue)"
        let genuineCA = receipts.intermediate.certificate
        let validity = try genuineCA.validityRange()
        func otherCA(marker: ASN1ObjectIdentifier?) throws(SoftwareAppleError) -> SigningIdentity {
            try receipts.root.issue(
                key: SigningKey.make(.p256, label: "\(label)/ca", seed: seed), subject: try Self.impostorCAName(),
                notBefore: validity.lowerBound, notAfter: validity.upperBound, signatureAlgorithm: .ecdsaWithSHA384,
                extensions: ReceiptHierarchy.caExtensions(marker: marker))
        }
        let ca: SigningIdentity
        var signerMarker: ASN1ObjectIdentifier? = ReceiptHierarchy.signerMarker
        switch impostor {
        case .signerWithoutMarker:
            ca = receipts.intermediate
            signerMarker = nil
        case .intermediateWithoutMarker:
            ca = try otherCA(marker: nil)
        case .noMarkers:
            ca = try otherCA(marker: nil)
            signerMarker = nil
        case .markersSwapped:
            ca = try otherCA(marker: ReceiptHierarchy.signerMarker)
            signerMarker = ReceiptHierarchy.caMarker
        case .signerUnderRoot:
            ca = receipts.root
        }
        let signer = try ca.issue(
            key: SigningKey.make(.p256, label: "\(label)/signer", seed: seed),
            subject: try ReceiptHierarchy.names().signer, notBefore: validity.lowerBound,
            notAfter: validity.upperBound, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: ReceiptHierarchy.signerExtensions(marker: signerMarker))
        return ReceiptHierarchy(root: receipts.root, intermediate: ca, signer: signer)
    }

    /// The name of the impostors' CA: another CA of the same root, as Apple's developer CAs are.
    private static func impostorCAName() throws(SoftwareAppleError) -> DistinguishedName {
        try SigningIdentity.signing("names") {
            try ReceiptHierarchy.authorityName("AttestKit Software Developer Services CA - G2")
        }
    }
}
