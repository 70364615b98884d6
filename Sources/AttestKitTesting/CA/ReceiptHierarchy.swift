import AttestKit
import Foundation
import SwiftASN1
import X509

/// The software Apple's receipt CA, shaped like Apple's (docs/apple-formats.md §4): a self-signed P-384 root (for Apple
/// Root CA - G3), a P-256 intermediate signed ecdsa-with-SHA384 (for Apple Application Integration CA 5 - G1) and a
/// P-256 signer signed ecdsa-with-SHA256 (for Application Attestation Fraud Receipt Signing). The intermediate and the
/// signer carry Apple's marker extensions of those two roles, non-critical with a NULL value, as Apple's do.
struct ReceiptHierarchy: Sendable {
    /// The receipt trust anchor.
    let root: SigningIdentity
    /// The CA that issues the signer.
    let intermediate: SigningIdentity
    /// The certificate that signs receipts.
    let signer: SigningIdentity

    /// Builds the hierarchy.
    ///
    /// - Parameters:
    ///   - seed: Derives the keys when given; random keys otherwise.
    ///   - label: Distinguishes the keys of several hierarchies derived from one seed.
    ///   - validity: The validity window of every certificate of the hierarchy.
    init(seed: [UInt8]?, label: String, validity: ClosedRange<Date>) throws(SoftwareAppleError) {
        let names = try Self.names()
        root = try SigningIdentity.root(
            key: SigningKey.make(.p384, label: "\(label)/receipt-root", seed: seed), subject: names.root,
            notBefore: validity.lowerBound, notAfter: validity.upperBound)
        intermediate = try root.issue(
            key: SigningKey.make(.p256, label: "\(label)/receipt-intermediate", seed: seed),
            subject: names.intermediate, notBefore: validity.lowerBound, notAfter: validity.upperBound,
            signatureAlgorithm: .ecdsaWithSHA384, extensions: Self.caExtensions(marker: Self.caMarker))
        signer = try intermediate.issue(
            key: SigningKey.make(.p256, label: "\(label)/receipt-signer", seed: seed),
            subject: names.signer, notBefore: validity.lowerBound, notAfter: validity.upperBound,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: Self.signerExtensions(marker: Self.signerMarker))
    }

    /// The extension that marks Apple's receipt CA.
    static let caMarker = MarkerExtensionPolicy.appleReceiptCA
    /// The extension that marks Apple's receipt signer.
    static let signerMarker = MarkerExtensionPolicy.appleReceiptSigner

    /// A CA's extensions: critical basicConstraints (CA) and keyUsage (keyCertSign, cRLSign), then `marker`.
    static func caExtensions(marker: ASN1ObjectIdentifier?) throws(SoftwareAppleError) -> Certificate.Extensions {
        try extensions("CA extensions", marker: marker) {
            try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
        }
    }

    /// A signer's extensions: critical basicConstraints (not a CA) and keyUsage (digitalSignature), then `marker`.
    static func signerExtensions(marker: ASN1ObjectIdentifier?) throws(SoftwareAppleError) -> Certificate.Extensions {
        try extensions("signer extensions", marker: marker) {
            try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
        }
    }

    /// `base` followed by `marker`, when given, as Apple writes its markers: non-critical, the value DER NULL.
    private static func extensions(
        _ what: String, marker: ASN1ObjectIdentifier?, _ base: () throws -> Certificate.Extensions
    ) throws(SoftwareAppleError) -> Certificate.Extensions {
        try SigningIdentity.signing(what) {
            var extensions = try base()
            if let marker {
                try extensions.append(Certificate.Extension(oid: marker, critical: false, value: [0x05, 0x00]))
            }
            return extensions
        }
    }

    /// Restores a hierarchy from a state file.
    init(root: SigningIdentity, intermediate: SigningIdentity, signer: SigningIdentity) {
        self.root = root
        self.intermediate = intermediate
        self.signer = signer
    }

    /// The distinguished names: Apple's shape, never Apple's words.
    static func names() throws(SoftwareAppleError) -> (
        root: DistinguishedName, intermediate: DistinguishedName, signer: DistinguishedName
    ) {
        try SigningIdentity.signing("names") {
            (
                try authorityName("AttestKit Software Root CA - G3"),
                try authorityName("AttestKit Software Application Integration CA 5 - G1"),
                try DistinguishedName {
                    CommonName("AttestKit Software Fraud Receipt Signing")
                    OrganizationName(SoftwareApple.organization)
                    CountryName("US")
                }
            )
        }
    }

    /// The name of one of the software Apple's certification authorities, in Apple's shape.
    static func authorityName(_ commonName: String) throws -> DistinguishedName {
        try DistinguishedName {
            CommonName(commonName)
            OrganizationalUnitName("AttestKit Software Certification Authority")
            OrganizationName(SoftwareApple.organization)
            CountryName("US")
        }
    }
}
