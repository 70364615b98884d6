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
///
/// A relying party that checks a certificate offline trusts it until its notAfter, whatever happens to the key after
/// issuance (a revocation, a new app key): hence a short ``validity`` (one hour by default). One that must see a
/// revocation at once asks the service (``KeyAttestation/introspect(certificate:now:)``, `POST /v1/tokens/introspect`
/// with `tokenTypeHint` `app_key_certificate`), which checks ``verifiedCertificate(_:at:)`` and the stored key.
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

    /// The default validity of an issued certificate: one hour, the longest a revoked key's certificate stays
    /// trusted offline.
    public static let defaultValidity: Duration = .seconds(3_600)
    /// The largest certificate ``verifiedCertificate(_:at:)`` parses, in bytes (this CA's are about 500).
    public static let maximumCertificateBytes = 4_096

    /// What a certificate this CA issued says, once its signature and validity were checked.
    public struct IssuedCertificate: Sendable, Hashable {
        /// The App Attest key it names (`CN`).
        public let keyID: KeyID
        /// The App ID it names (`OU`).
        public let appID: AppID
        /// The app key it certifies.
        public let appKey: AppKey
        /// Its notBefore.
        public let notValidBefore: Date
        /// Its notAfter.
        public let notValidAfter: Date
    }
    /// The shortest validity accepted: 5 minutes.
    public static let minimumValidity: Duration = .seconds(300)
    /// The longest validity accepted: 30 days.
    public static let maximumValidity: Duration = .seconds(2_592_000)

    /// A CA from its certificate and private key.
    /// - Throws: `key_attestation_ca_invalid` (not configured) when the key is not the certificate's, the
    ///   certificate is not a CA (basicConstraints `CA:TRUE`), its keyUsage (when it has one) does not allow
    ///   signing certificates (`keyCertSign`: relying parties would refuse every certificate it issues), its
    ///   subjectKeyIdentifier (when it has one) does not parse, or the validity is outside 5 minutes to 30 days.
    public init(
        certificate: Certificate, privateKey: Certificate.PrivateKey, validity: Duration = defaultValidity
    ) throws(FlowError) {
        guard case .some(.isCertificateAuthority) = try? certificate.extensions.basicConstraints else {
            throw FlowError.keyAttestationCAInvalid(
                "the certificate is not a CA (basicConstraints CA:TRUE)", .certificate)
        }
        // Without a keyUsage extension any use is allowed (RFC 5280 §4.2.1.3); with one it must name keyCertSign.
        let keyUsage: KeyUsage?
        do {
            keyUsage = try certificate.extensions.keyUsage
        } catch {
            throw FlowError.keyAttestationCAInvalid("the certificate's keyUsage does not parse", .certificate)
        }
        if let keyUsage, !keyUsage.keyCertSign {
            throw FlowError.keyAttestationCAInvalid(
                "the certificate's keyUsage does not allow signing certificates (keyCertSign)", .certificate)
        }
        // Read at every issue (the issued certificates' authority key identifier; none without one): one that does
        // not parse would fail each of them after its key was registered, so it is refused here.
        do {
            _ = try certificate.extensions.subjectKeyIdentifier
        } catch {
            throw FlowError.keyAttestationCAInvalid(
                "the certificate's subjectKeyIdentifier does not parse", .certificate)
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

    /// The certificate `der` when this CA issued it and it is valid at `now`: at most ``maximumCertificateBytes``,
    /// DER of an X.509 certificate whose issuer is this CA's subject and whose signature verifies with this CA's key,
    /// an end entity, within its validity, naming one key id (`CN`) and one App ID (`OU`) and certifying a P-256
    /// key. Otherwise `nil`: whether the key it names is still registered and bound is the caller's check.
    public func verifiedCertificate(_ der: some Collection<UInt8>, at now: Date) -> IssuedCertificate? {
        guard der.count <= Self.maximumCertificateBytes,
            let issued = try? Certificate(derEncoded: Array(der)),
            issued.issuer == certificate.subject,
            certificate.publicKey.isValidSignature(issued.signature, for: issued),
            case .some(.notCertificateAuthority) = try? issued.extensions.basicConstraints,
            issued.notValidBefore <= now, now < issued.notValidAfter,
            let keyText = Self.single(.RDNAttributeType.commonName, of: issued.subject),
            let keyBytes = Base64URL.decode(Substring(keyText)), let keyID = try? KeyID(bytes: keyBytes),
            let appText = Self.single(.RDNAttributeType.organizationalUnitName, of: issued.subject),
            let appID = try? AppID(appText),
            let publicKey = P256.Signing.PublicKey(issued.publicKey),
            let appKey = try? AppKey(subjectPublicKeyInfo: publicKey.derRepresentation)
        else { return nil }
        return IssuedCertificate(
            keyID: keyID, appID: appID, appKey: appKey, notValidBefore: issued.notValidBefore,
            notValidAfter: issued.notValidAfter)
    }

    /// The value of the one attribute of `type` in `name`, or `nil` when there is none or more than one.
    private static func single(_ type: ASN1ObjectIdentifier, of name: DistinguishedName) -> String? {
        let values = name.flatMap { $0 }.filter { $0.type == type }.compactMap { String($0.value) }
        return values.count == 1 ? values.first : nil
    }

    /// Checks that the CA certificate is valid at `now`, so that it can issue then.
    /// - Throws: `key_attestation_ca_invalid` (not configured) when it is not.
    public func checkValidity(at now: Date) throws(FlowError) {
        guard certificate.notValidBefore <= now, now < certificate.notValidAfter else {
            throw FlowError.keyAttestationCAInvalid("the CA certificate is not valid now", .certificate)
        }
    }

    /// Issues a certificate for `appKey`, bound to the App Attest key `keyID` of `appID`, at `now`.
    /// - Returns: The certificate's DER.
    /// - Throws: `key_attestation_ca_invalid` (not configured) when the CA itself is not valid at `now`
    ///   (``checkValidity(at:)``); `internal_error` when signing fails.
    public func issue(
        for appKey: AppKey, keyID: KeyID, appID: AppID, now: Date,
        using generator: inout some RandomNumberGenerator
    ) throws(FlowError) -> [UInt8] {
        try checkValidity(at: now)
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
