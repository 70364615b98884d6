import Foundation
import X509

/// The software Apple's attestation CA, shaped like Apple's (docs/apple-formats.md §2): a self-signed P-384 root and a
/// P-384 intermediate (CA, pathlen 0) that issues the credential certificates.
struct AttestationHierarchy: Sendable {
    /// Stands for Apple App Attestation Root CA.
    let root: SigningIdentity
    /// Stands for Apple App Attestation CA 1: issues credential certificates, ecdsa-with-SHA256.
    let intermediate: SigningIdentity

    /// Builds the hierarchy.
    ///
    /// - Parameters:
    ///   - seed: Derives the keys when given (same seed, same keys); random keys otherwise.
    ///   - label: Distinguishes the keys of several hierarchies derived from one seed (the stranger's).
    ///   - validity: The CA certificates' validity window.
    init(seed: [UInt8]?, label: String, validity: ClosedRange<Date>) throws(SoftwareAppleError) {
        let names = try Self.names()
        root = try SigningIdentity.root(
            key: SigningKey.make(.p384, label: "\(label)/attestation-root", seed: seed), subject: names.root,
            notBefore: validity.lowerBound, notAfter: validity.upperBound)
        let extensions = try SigningIdentity.signing("CA extensions") {
            try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
        }
        intermediate = try root.issue(
            key: SigningKey.make(.p384, label: "\(label)/attestation-intermediate", seed: seed),
            subject: names.intermediate, notBefore: validity.lowerBound, notAfter: validity.upperBound,
            signatureAlgorithm: .ecdsaWithSHA384, extensions: extensions)
    }

    /// Restores a hierarchy from a state file.
    init(root: SigningIdentity, intermediate: SigningIdentity) {
        self.root = root
        self.intermediate = intermediate
    }

    /// The distinguished names: Apple's shape, never Apple's words.
    static func names() throws(SoftwareAppleError) -> (root: DistinguishedName, intermediate: DistinguishedName) {
        try SigningIdentity.signing("names") {
            (
                try DistinguishedName {
                    CommonName("AttestKit Software App Attestation Root CA")
                    OrganizationName(SoftwareApple.organization)
                    StateOrProvinceName("California")
                },
                try DistinguishedName {
                    CommonName("AttestKit Software App Attestation CA 1")
                    OrganizationName(SoftwareApple.organization)
                    StateOrProvinceName("California")
                }
            )
        }
    }
}
