public import AttestKit
public import AttestKitStore
import AttestKitWire
import Crypto
public import Foundation
import SwiftASN1
public import X509

/// The service's CA for key attestation: it issues a short-lived X.509 certificate for each attested app key, so
/// that a relying party that trusts the CA can trust the app key without asking the service (what Warden Supreme
/// issues).
///
/// The certificate names the App Attest key id in its subject (`CN`, base64url without padding) and the app id in
/// `OU`; it is an end-entity certificate (basicConstraints `CA:FALSE`, keyUsage `digitalSignature` and
/// `keyAgreement`, both critical) with subject and authority key identifiers, valid from a minute before issuance
/// for ``validity``, never beyond the CA's own expiry.
public struct AppKeyAuthority: Sendable {
    /// The CA certificate that issues app key certificates.
    public let certificate: Certificate
    /// The CA's private key. Never logged.
    let privateKey: Certificate.PrivateKey
    /// How long an issued certificate is valid.
    public let validity: Duration

    /// Which part of a CA a `key_attestation_ca_invalid` error is about (its ``FlowError/underlying``), so that a
    /// configuration names the right setting.
    package enum Problem: Error, Sendable {
        /// The CA certificate.
        case certificate
        /// The CA's private key.
        case privateKey
        /// The validity of issued certificates.
        case validity
    }

    /// The default validity of an issued certificate: one day.
    public static let defaultValidity: Duration = .seconds(86_400)
    /// The shortest validity accepted: 5 minutes.
    public static let minimumValidity: Duration = .seconds(300)
    /// The longest validity accepted: 30 days.
    public static let maximumValidity: Duration = .seconds(2_592_000)

    /// A CA from its certificate and private key.
    /// - Throws: `key_attestation_ca_invalid` (not configured) when the key is not the certificate's, the
    ///   certificate is not a CA (basicConstraints `CA:TRUE`), or the validity is outside 5 minutes to 30 days.
    public init(
        certificate: Certificate, privateKey: Certificate.PrivateKey, validity: Duration = defaultValidity
    ) throws(FlowError) {
        guard case .some(.isCertificateAuthority) = try? certificate.extensions.basicConstraints else {
            throw FlowError.keyAttestationCAInvalid(
                "the certificate is not a CA (basicConstraints CA:TRUE)", .certificate)
        }
        guard privateKey.publicKey == certificate.publicKey else {
            throw FlowError.keyAttestationCAInvalid("the private key does not match the CA certificate", .privateKey)
        }
        guard validity >= Self.minimumValidity, validity <= Self.maximumValidity else {
            throw FlowError.keyAttestationCAInvalid(
                "the certificate validity must lie between 5 minutes and 30 days", .validity)
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.validity = validity
    }

    /// A CA from PEM text: a `CERTIFICATE` and its private key (`PRIVATE KEY`, `EC PRIVATE KEY` or
    /// `RSA PRIVATE KEY`).
    /// - Throws: `key_attestation_ca_invalid` (not configured) when either does not parse, or as
    ///   ``init(certificate:privateKey:validity:)``.
    public init(certificatePEM: String, privateKeyPEM: String, validity: Duration = defaultValidity) throws(FlowError) {
        guard let certificate = try? Certificate(pemEncoded: certificatePEM) else {
            throw FlowError.keyAttestationCAInvalid("the CA certificate is not a PEM X.509 certificate", .certificate)
        }
        guard let privateKey = try? Certificate.PrivateKey(pemEncoded: privateKeyPEM) else {
            throw FlowError.keyAttestationCAInvalid("the CA key is not a PEM private key", .privateKey)
        }
        try self.init(certificate: certificate, privateKey: privateKey, validity: validity)
    }

    /// Issues a certificate for `appKey`, bound to the App Attest key `keyID` of `appID`, at `now`.
    /// - Returns: The certificate's DER.
    /// - Throws: `key_attestation_ca_invalid` (not configured) when the CA itself is not valid at `now`;
    ///   `internal_error` when signing fails.
    public func issue(
        for appKey: AppKey, keyID: KeyID, appID: AppID, now: Date,
        using generator: inout some RandomNumberGenerator
    ) throws(FlowError) -> [UInt8] {
        guard certificate.notValidBefore <= now, now < certificate.notValidAfter else {
            throw FlowError.keyAttestationCAInvalid("the CA certificate is not valid now", .certificate)
        }
        let seconds = Double(validity.components.seconds)
        // Whole seconds: X.509 times have no fractions, and a certificate must not start after it was issued.
        let start = Date(timeIntervalSince1970: (now.timeIntervalSince1970 - 60).rounded(.down))
        let end = min(start.addingTimeInterval(seconds + 60), certificate.notValidAfter)
        var serial = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        // Positive, and without a leading zero byte.
        serial[0] = (serial[0] & 0x7F) | 0x01
        do {
            let publicKey = Certificate.PublicKey(appKey.publicKey)
            var extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyAgreement: true))
                SubjectKeyIdentifier(hash: publicKey)
            }
            if let identifier = try certificate.extensions.subjectKeyIdentifier?.keyIdentifier {
                try extensions.append(
                    Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: identifier), critical: false))
            }
            let subject = try DistinguishedName {
                OrganizationalUnitName(appID.description)
                CommonName(Base64URL.encode(keyID.bytes))
            }
            let issued = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(bytes: serial), publicKey: publicKey,
                notValidBefore: start, notValidAfter: end, issuer: certificate.subject, subject: subject,
                extensions: extensions, issuerPrivateKey: privateKey)
            var serializer = DER.Serializer()
            try serializer.serialize(issued)
            return serializer.serializedBytes
        } catch {
            throw FlowError(.internalError, .internalFailure, "the app key certificate could not be signed")
        }
    }
}
