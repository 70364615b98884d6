import AttestKit
import Crypto
import Foundation
import SwiftASN1
import X509

/// The credential certificate (the x5c leaf) of a simulated attestation, shaped like Apple's (SPEC.md §2).
///
/// - Subject `CN=<hex keyId>, OU=AAA Certification, O=…, ST=California`; a P-256 key; signed
///   ecdsa-with-SHA256 by the P-384 attestation CA; serial number = issuance time in Unix milliseconds.
/// - Extensions, in Apple's order: basicConstraints CA:FALSE and keyUsage (digitalSignature, nonRepudiation,
///   keyEncipherment, dataEncipherment), both critical; optionally the 2026 EKU 1.2.840.113635.100.4.24; the OS
///   version extension 1.2.840.113635.100.8.7; the nonce extension 1.2.840.113635.100.8.2, encoded exactly
///   `30 24 A1 22 04 20 <nonce>`. No key identifiers, as in Apple's leaves.
enum CredentialCertificate {
    /// The organizational unit of every credential certificate.
    static let organizationalUnit = "AAA Certification"
    /// The extended key usage of 2026 credential certificates.
    static let appleExtendedKeyUsage: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 4, 24]

    /// What goes into a credential certificate besides its key.
    struct Contents {
        /// SHA-256(authenticatorData ‖ clientDataHash), or another value for the nonce fault.
        var nonce: [UInt8]
        /// Field `[1400]` of the OS version extension.
        var osVersion: String
        /// Whether to write the 2026 EKU.
        var extendedKeyUsage: Bool
        /// The issuance time: the serial number.
        var issuedAt: Date
        /// The validity window.
        var validity: ClosedRange<Date>
    }

    /// Issues the DER of a credential certificate for `publicKey`, signed by `issuer`.
    static func issue(
        for publicKey: P256.Signing.PublicKey,
        _ contents: Contents,
        by issuer: SigningIdentity
    ) throws(SoftwareAppleError) -> [UInt8] {
        let keyID = KeyID(publicKey: publicKey)
        let certificate = try SigningIdentity.signing("a credential certificate") {
            let subject = try DistinguishedName {
                CommonName(Hex.encode(keyID.bytes))
                OrganizationalUnitName(organizationalUnit)
                OrganizationName(SoftwareApple.organization)
                StateOrProvinceName("California")
            }
            var extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(
                    KeyUsage(
                        digitalSignature: true, nonRepudiation: true, keyEncipherment: true, dataEncipherment: true))
            }
            if contents.extendedKeyUsage {
                try extensions.append(
                    Certificate.Extension(
                        ExtendedKeyUsage([ExtendedKeyUsage.Usage(oid: appleExtendedKeyUsage)]), critical: false))
            }
            try extensions.append(
                Certificate.Extension(
                    oid: AppAttestDeviceExtension.oid, critical: false,
                    value: ArraySlice(AppAttestDeviceExtension(osVersion: contents.osVersion).derValue())))
            try extensions.append(
                Certificate.Extension(
                    oid: AppAttestNonceExtension.oid, critical: false,
                    value: ArraySlice(AppAttestNonceExtension(nonce: contents.nonce).derValue())))
            return try issuer.issueCertificate(
                publicKey: Certificate.PublicKey(publicKey), serialNumber: serialNumber(issuedAt: contents.issuedAt),
                subject: subject, notBefore: contents.validity.lowerBound, notAfter: contents.validity.upperBound,
                signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions)
        }
        return try SigningIdentity.der(of: certificate)
    }

    /// The issuance time in Unix milliseconds, as Apple numbers credential certificates (at least 1).
    static func serialNumber(issuedAt: Date) -> Certificate.SerialNumber {
        let milliseconds = (issuedAt.timeIntervalSince1970 * 1000).rounded(.down)
        return Certificate.SerialNumber(UInt64(exactly: milliseconds).map { max($0, 1) } ?? 1)
    }
}
