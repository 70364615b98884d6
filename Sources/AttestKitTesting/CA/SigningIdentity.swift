import Crypto
import Foundation
import SwiftASN1
import X509

/// A private key and the certificate that names it: one node of the software Apple's certificate hierarchies.
struct SigningIdentity: Sendable {
    /// The private key.
    let key: SigningKey
    /// The certificate of ``key``'s public half.
    let certificate: Certificate
    /// ``certificate`` as DER.
    let der: [UInt8]

    init(key: SigningKey, certificate: Certificate) throws(SoftwareAppleError) {
        self.key = key
        self.certificate = certificate
        self.der = try Self.der(of: certificate)
    }

    /// A self-signed root: basicConstraints CA, keyUsage keyCertSign + cRLSign, both critical, ecdsa-with-SHA384.
    static func root(
        key: SigningKey, subject: DistinguishedName, notBefore: Date, notAfter: Date
    ) throws(SoftwareAppleError) -> SigningIdentity {
        let certificate = try signing("a root certificate") {
            try Certificate(
                version: .v3, serialNumber: serialNumber(for: key.publicKey), publicKey: key.publicKey,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: subject, subject: subject,
                signatureAlgorithm: .ecdsaWithSHA384,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    SubjectKeyIdentifier(hash: key.publicKey)
                },
                issuerPrivateKey: key.certificateKey)
        }
        return try SigningIdentity(key: key, certificate: certificate)
    }

    /// A certificate for `key`, issued by this identity with `signatureAlgorithm`, as Apple's CA certificates are:
    /// `extensions` followed by the authority and subject key identifiers.
    func issue(
        key subjectKey: SigningKey,
        subject: DistinguishedName,
        notBefore: Date,
        notAfter: Date,
        signatureAlgorithm: Certificate.SignatureAlgorithm,
        extensions: Certificate.Extensions
    ) throws(SoftwareAppleError) -> SigningIdentity {
        var extensions = extensions
        try Self.signing("key identifiers") {
            if let identifier = try self.certificate.extensions.subjectKeyIdentifier?.keyIdentifier {
                try extensions.append(
                    Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: identifier), critical: false))
            }
            try extensions.append(
                Certificate.Extension(SubjectKeyIdentifier(hash: subjectKey.publicKey), critical: false))
        }
        let issued = try issueCertificate(
            publicKey: subjectKey.publicKey, serialNumber: Self.serialNumber(for: subjectKey.publicKey),
            subject: subject, notBefore: notBefore, notAfter: notAfter, signatureAlgorithm: signatureAlgorithm,
            extensions: extensions)
        return try SigningIdentity(key: subjectKey, certificate: issued)
    }

    /// A certificate for a public key, with exactly `extensions`.
    func issueCertificate(
        publicKey: Certificate.PublicKey,
        serialNumber: Certificate.SerialNumber,
        subject: DistinguishedName,
        notBefore: Date,
        notAfter: Date,
        signatureAlgorithm: Certificate.SignatureAlgorithm,
        extensions: Certificate.Extensions
    ) throws(SoftwareAppleError) -> Certificate {
        try Self.signing("a certificate for \(subject)") {
            try Certificate(
                version: .v3, serialNumber: serialNumber, publicKey: publicKey, notValidBefore: notBefore,
                notValidAfter: notAfter, issuer: certificate.subject, subject: subject,
                signatureAlgorithm: signatureAlgorithm, extensions: extensions, issuerPrivateKey: key.certificateKey)
        }
    }

    /// The DER encoding of a certificate.
    static func der(of certificate: Certificate) throws(SoftwareAppleError) -> [UInt8] {
        try signing("a certificate's DER") {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
    }

    /// A positive 16-byte serial number derived from the public key, so that seeded hierarchies are repeatable.
    static func serialNumber(for publicKey: Certificate.PublicKey) -> Certificate.SerialNumber {
        var bytes = Array(SHA256.hash(data: Array(publicKey.subjectPublicKeyInfoBytes)).prefix(16))
        bytes[0] = (bytes[0] & 0x7F) | 0x01
        return Certificate.SerialNumber(bytes: bytes)
    }

    /// Runs `body`, turning any error into ``SoftwareAppleError/Code/signingFailed``.
    static func signing<Result>(_ what: String, _ body: () throws -> Result) throws(SoftwareAppleError) -> Result {
        do {
            return try body()
        } catch {
            throw SoftwareAppleError(.signingFailed, "cannot build \(what): \(error)")
        }
    }
}
