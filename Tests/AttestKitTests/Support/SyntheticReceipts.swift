import Crypto
import Foundation
import SwiftASN1
import X509

@testable import AttestKit

/// A software receipt signer for shapes the real vectors lack (textbook signed attributes, broken containers):
/// a P-384 root, a P-256 intermediate CA and a P-256 signing certificate, generated at test time, and a
/// credential certificate for field 3. Receipts come out as definite-length DER.
struct SyntheticReceipts: Sendable {
    /// Which `signedAttrs` the signer writes, and what its signature covers.
    enum Attributes: Sendable {
        /// No signed attributes; the signature covers the content.
        case none
        /// Textbook CMS: contentType and messageDigest, signature over their DER SET.
        case signed
        /// The 2020 quirk: the same attributes, signature over the raw content.
        case signedOverContent
    }

    /// Ways to build a container that is not what Apple sends.
    struct Options: Sendable {
        var attributes: Attributes = .none
        /// The messageDigest attribute's value; SHA-256 of the content when `nil`.
        var messageDigest: [UInt8]?
        var includeMessageDigest = true
        /// Repeats the embedded certificates this many times.
        var certificateCopies = 1
        var signerInfoCount = 1
        var includeCRLs = false
        var digestAlgorithm: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
        var signatureAlgorithm: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 2]
    }

    static let shared: SyntheticReceipts = {
        do { return try SyntheticReceipts() } catch { preconditionFailure("cannot build the test CA: \(error)") }
    }()

    /// A time inside every certificate's validity window, 100 s after the default creation time.
    static let validTime = Date(timeIntervalSince1970: 1_749_981_700)  // 2025-06-15T10:01:40Z

    let anchor: TrustAnchor
    let intermediate: Certificate
    let signer: Certificate
    private let signerKey: P256.Signing.PrivateKey
    /// The credential certificate for field 3, and the key identifier of its key.
    let credentialDER: [UInt8]
    let keyID: KeyID

    private init() throws {
        let rootKey = P384.Signing.PrivateKey()
        let caKey = P256.Signing.PrivateKey()
        signerKey = P256.Signing.PrivateKey()
        let start = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
        let end = Date(timeIntervalSince1970: 2_208_988_800)  // 2040-01-01
        let rootName = try DistinguishedName { CommonName("AttestKit Test Root CA - G3") }
        let caName = try DistinguishedName { CommonName("AttestKit Test Integration CA") }
        let caExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: start,
            notValidAfter: end, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: caExtensions, issuerPrivateKey: .init(rootKey))
        // Apple's markers of its receipt CA and receipt signer: non-critical, the value DER NULL.
        var intermediateExtensions = caExtensions
        try intermediateExtensions.append(
            Certificate.Extension(oid: MarkerExtensionPolicy.appleReceiptCA, critical: false, value: [0x05, 0x00]))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey), notValidBefore: start,
            notValidAfter: end, issuer: rootName, subject: caName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        signer = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(signerKey.publicKey),
            notValidBefore: Date(timeIntervalSince1970: 1_735_689_600),  // 2025-01-01
            notValidAfter: Date(timeIntervalSince1970: 1_767_225_600),  // 2026-01-01
            issuer: caName, subject: try DistinguishedName { CommonName("AttestKit Test Receipt Signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(
                    oid: MarkerExtensionPolicy.appleReceiptSigner, critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(caKey))
        anchor = try TrustAnchor(certificate: root)

        let credentialKey = P256.Signing.PrivateKey()
        let credentialName = try DistinguishedName { CommonName("AttestKit Test Credential") }
        let credential = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(credentialKey.publicKey), notValidBefore: start,
            notValidAfter: end, issuer: caName, subject: credentialName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(), issuerPrivateKey: .init(caKey))
        var coder = DER.Serializer()
        try coder.serialize(credential)
        credentialDER = coder.serializedBytes
        keyID = KeyID(publicKey: credentialKey.publicKey)
    }

    /// The receipt payload: a SET of `SEQUENCE { type, 1, OCTET STRING }`, in the given (unsorted) order.
    static func payload(_ fields: [(Int, [UInt8])]) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .set) { coder in
            for (type, value) in fields {
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(type)
                    try coder.serialize(1)
                    try coder.serialize(ASN1OctetString(contentBytes: value[...]))
                }
            }
        }
        return coder.serializedBytes
    }

    /// A valid `RECEIPT` payload's fields for the App ID `TEAM123456.com.example.app` and ``credentialDER``.
    func fields(type: String = "RECEIPT", creationTime: String = "2025-06-15T10:00:00.25Z") -> [(Int, [UInt8])] {
        [
            (17, Array("7".utf8)), (6, Array(type.utf8)), (2, Array("TEAM123456.com.example.app".utf8)),
            (3, credentialDER), (4, [UInt8](repeating: 0xAB, count: 32)), (5, Array("dG9rZW4=".utf8)),
            (7, Array("sandbox".utf8)), (12, Array(creationTime.utf8)), (19, Array("2025-06-16T10:00:00.25Z".utf8)),
            (21, Array("2025-09-13T10:00:00.25Z".utf8)),
        ]
    }

    /// A signed CMS container around `payload`.
    func receipt(payload: [UInt8], options: Options = Options()) throws -> [UInt8] {
        let algorithm = { (oid: ASN1ObjectIdentifier) in
            { (coder: inout DER.Serializer) throws in
                try coder.appendConstructedNode(identifier: .sequence) { try $0.serialize(oid) }
            }
        }
        let attributes = try signedAttributes(payload: payload, options: options)
        let message = options.attributes == .signed ? [0x31] + attributes.dropFirst() : payload
        let signature = Array(try signerKey.signature(for: message).derRepresentation)

        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(ASN1ObjectIdentifier(elements: [1, 2, 840, 113_549, 1, 7, 2]))
            try coder.appendConstructedNode(identifier: Self.context(0)) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(1)
                    try coder.appendConstructedNode(identifier: .set, algorithm(options.digestAlgorithm))
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        try coder.serialize(ASN1ObjectIdentifier(elements: [1, 2, 840, 113_549, 1, 7, 1]))
                        try coder.appendConstructedNode(identifier: Self.context(0)) { coder in
                            try coder.serialize(ASN1OctetString(contentBytes: payload[...]))
                        }
                    }
                    try coder.appendConstructedNode(identifier: Self.context(0)) { coder in
                        for _ in 0..<options.certificateCopies {
                            for certificate in [signer, intermediate, anchor.certificate] {
                                try coder.serialize(certificate)
                            }
                        }
                    }
                    if options.includeCRLs {
                        coder.appendConstructedNode(identifier: Self.context(1)) { _ in }
                    }
                    try coder.appendConstructedNode(identifier: .set) { coder in
                        for _ in 0..<options.signerInfoCount {
                            try coder.appendConstructedNode(identifier: .sequence) { coder in
                                try coder.serialize(1)
                                try coder.appendConstructedNode(identifier: .sequence) { coder in
                                    try coder.serialize(signer.issuer)
                                    try coder.serialize(signer.serialNumber.bytes)
                                }
                                try algorithm(options.digestAlgorithm)(&coder)
                                if options.attributes != .none { coder.serializeRawBytes(attributes) }
                                try algorithm(options.signatureAlgorithm)(&coder)
                                try coder.serialize(ASN1OctetString(contentBytes: signature[...]))
                            }
                        }
                    }
                }
            }
        }
        return coder.serializedBytes
    }

    /// `[0] IMPLICIT SET OF Attribute` with contentType and (optionally) messageDigest.
    private func signedAttributes(payload: [UInt8], options: Options) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: Self.context(0)) { coder in
            try Self.attribute(&coder, [1, 2, 840, 113_549, 1, 9, 3]) {
                try $0.serialize(ASN1ObjectIdentifier(elements: [1, 2, 840, 113_549, 1, 7, 1]))
            }
            if options.includeMessageDigest {
                let digest = options.messageDigest ?? Array(SHA256.hash(data: payload))
                try Self.attribute(&coder, [1, 2, 840, 113_549, 1, 9, 4]) {
                    try $0.serialize(ASN1OctetString(contentBytes: digest[...]))
                }
            }
        }
        return coder.serializedBytes
    }

    private static func attribute(
        _ coder: inout DER.Serializer, _ type: ASN1ObjectIdentifier, _ value: (inout DER.Serializer) throws -> Void
    ) throws {
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(type)
            try coder.appendConstructedNode(identifier: .set, value)
        }
    }

    private static func context(_ number: UInt) -> ASN1Identifier {
        ASN1Identifier(tagWithNumber: number, tagClass: .contextSpecific)
    }
}
