import AttestKit
import Crypto
import Foundation
import SwiftASN1
import X509

/// The credential certificate (the x5c leaf) of a simulated attestation, shaped like Apple's (docs/apple-formats.md
/// §2).
///
/// - Subject `CN=<hex keyId>, OU=AAA Certification, O=…, ST=California`; a P-256 key; signed
///   ecdsa-with-SHA256 by the P-384 attestation CA; serial number = issuance time in Unix milliseconds.
/// - Extensions, in Apple's order: basicConstraints CA:FALSE and keyUsage (digitalSignature, nonRepudiation,
///   keyEncipherment, dataEncipherment), both critical; optionally the 2026 EKU 1.2.840.113635.100.4.24; the
///   undocumented 1.2.840.113635.100.8.5 with the App ID in field `[1204]` and the other fields of Apple's 2026
///   sample; the device extension 1.2.840.113635.100.8.7 with the OS version in `[1400]` and fields shaped like a
///   2024 device's; the nonce extension 1.2.840.113635.100.8.2, encoded exactly `30 24 A1 22 04 20 <nonce>`;
///   optionally, last, the key access-control extension 1.2.840.113635.100.8.6 (2026 leaves), its value as given.
///   All non-critical; no key identifiers, as in Apple's leaves.
enum CredentialCertificate {
    /// The organizational unit of every credential certificate.
    static let organizationalUnit = "AAA Certification"
    /// The extended key usage of 2026 credential certificates.
    static let appleExtendedKeyUsage: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 4, 24]
    /// The undocumented extension that carries the App ID in field `[1204]`.
    static let appExtension: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 8, 5]

    /// What goes into a credential certificate besides its key.
    struct Contents {
        /// Field `[1204]` of extension 8.5.
        var appID: String
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
        /// The DER value of the key access-control extension, written as given (even malformed), or `nil` for none.
        var keyAccessControl: [UInt8]? = nil
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
                    oid: appExtension, critical: false, value: appExtensionValue(contents.appID)[...]))
            try extensions.append(
                Certificate.Extension(
                    oid: AppAttestDeviceExtension.oid, critical: false,
                    value: deviceExtensionValue(contents.osVersion)[...]))
            try extensions.append(
                Certificate.Extension(
                    oid: AppAttestNonceExtension.oid, critical: false,
                    value: ArraySlice(AppAttestNonceExtension(nonce: contents.nonce).derValue())))
            if let value = contents.keyAccessControl {
                try extensions.append(
                    Certificate.Extension(oid: AppAttestKeyAccessControl.oid, critical: false, value: value[...]))
            }
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

    /// Extension 8.5 as in Apple's 2026 sample: `[4]` 10, `[1200…1203]` 0, `[1204]` the App ID, `[1206]` 4,
    /// `[1207]` 0, `[1209…1211]` 0, `[10]` 0. Apple documents none of it.
    static func appExtensionValue(_ appID: String) throws -> [UInt8] {
        try taggedSequence([
            (4, .integer(10)), (1200, .integer(0)), (1201, .integer(0)), (1202, .integer(0)), (1203, .integer(0)),
            (1204, .octets(Array(appID.utf8))), (1206, .integer(4)), (1207, .integer(0)), (1209, .integer(0)),
            (1210, .integer(0)), (1211, .integer(0)), (10, .integer(0)),
        ])
    }

    /// Extension 8.7 shaped like a 2024 device's: `[1400]` the OS version (the one field implementers read),
    /// `[1104]` 0xFFFFFFFF, `[1403]` a build, `[1405]` the OS version again, `[1406]` 0, `[1420]` a version list.
    static func deviceExtensionValue(_ osVersion: String) throws -> [UInt8] {
        try taggedSequence([
            (AppAttestDeviceExtension.osVersionTag, .octets(Array(osVersion.utf8))), (1104, .integer(0xFFFF_FFFF)),
            (1403, .octets(Array("AKSIM1".utf8))), (1405, .octets(Array(osVersion.utf8))), (1406, .integer(0)),
            (1420, .octets(Array("1.0.0.0.0,0".utf8))),
        ])
    }

    /// A field of an Apple-private extension.
    enum TaggedValue {
        case integer(Int)
        case octets([UInt8])
    }

    /// `SEQUENCE { [tag] EXPLICIT value, … }` in the given order.
    private static func taggedSequence(_ fields: [(tag: UInt, value: TaggedValue)]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            for field in fields {
                try sequence.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: field.tag, tagClass: .contextSpecific)
                ) { tagged in
                    switch field.value {
                    case .integer(let number): try tagged.serialize(number)
                    case .octets(let bytes): try tagged.serialize(ASN1OctetString(contentBytes: bytes[...]))
                    }
                }
            }
        }
        return serializer.serializedBytes
    }
}
