import Crypto
import Foundation
package import X509
import SwiftASN1

/// The PKCS#7/CMS `SignedData` envelope of an App Attest receipt (docs/apple-formats.md §4), parsed but not yet
/// trusted.
///
/// Apple encodes receipts in BER: indefinite lengths (`30 80`) and an `eContent` split into a constructed
/// OCTET STRING of 1000-byte chunks, whose payload straddles the chunks. Some refreshed receipts are
/// definite-length DER instead; both are accepted. The structure is checked once here, strictly:
/// `SignedData` version 1, `digestAlgorithms` exactly {sha256}, attached `id-data` content, between one and
/// ``maximumCertificates`` certificates, no CRLs, exactly one `SignerInfo` (version 1, issuer and serial
/// number, sha256, ecdsa-with-SHA256, no unsigned attributes) and no trailing bytes.
package struct ReceiptContainer: Sendable {
    /// How the outermost `ContentInfo` was encoded.
    package enum Encoding: Sendable, Hashable {
        /// BER with indefinite lengths (`30 80`), as Apple normally sends.
        case indefiniteLength
        /// Definite lengths (`30 82 …`), seen on some refreshed receipts.
        case definiteLength
    }

    /// The message the signer's signature turned out to cover.
    package enum SignedMessage: Sendable, Hashable {
        /// No signed attributes: the signature covers the raw `eContent`.
        case content
        /// Textbook CMS: the signature covers the DER `SET` of the signed attributes.
        case signedAttributes
        /// The 2020 quirk: signed attributes are present, but the signature covers the raw `eContent`.
        case contentDespiteSignedAttributes
    }

    /// The signer's `signedAttrs`, present on receipts from August to early October 2020.
    package struct SignedAttributes: Sendable {
        /// The attributes encoded as a DER `SET` (tag `0x31`): what a textbook CMS signature covers.
        package let setEncoding: [UInt8]
        /// The value of the mandatory messageDigest attribute (1.2.840.113549.1.9.4).
        package let messageDigest: ArraySlice<UInt8>
    }

    /// The largest receipt accepted, in bytes. Real receipts are about 4 KB.
    package static let maximumSize = 64 * 1024
    /// The most embedded certificates accepted. Apple sends three (signer, CA, root).
    package static let maximumCertificates = 8

    /// How the container was encoded.
    package let encoding: Encoding
    /// The attached `eContent`, flattened: the DER payload that ``Receipt`` parses.
    package let content: ArraySlice<UInt8>
    /// Every embedded certificate, in order (the root's copy included: chain validation ignores it).
    package let certificates: [Certificate]
    /// The certificate named by the `SignerInfo`'s issuer and serial number.
    package let signer: Certificate
    /// The signer's signed attributes, if any.
    package let signedAttributes: SignedAttributes?
    /// The signature value: a DER ECDSA-Sig-Value.
    package let signature: ArraySlice<UInt8>

    /// Parses a receipt's CMS structure.
    ///
    /// - Throws: ``AttestKitError/Code/inputTooLarge`` above ``maximumSize`` bytes,
    ///   ``AttestKitError/Code/receiptMalformed`` for anything that is not the structure described above.
    package init(berEncoded bytes: [UInt8]) throws(AttestKitError) {
        guard bytes.count <= Self.maximumSize else {
            throw AttestKitError(.inputTooLarge, "a receipt is at most \(Self.maximumSize) bytes, got \(bytes.count)")
        }
        do {
            let root = try BER.parse(bytes)
            // `30 80`: the second byte of an indefinite-length encoding is 0x80.
            let indefinite = root.encodedBytes.dropFirst().first == 0x80
            self = try BER.sequence(root, identifier: .sequence) { nodes in
                guard try ASN1ObjectIdentifier(berEncoded: &nodes) == OID.signedData else {
                    throw Malformed("the content type is not signedData")
                }
                let content = try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { $0 }
                return try Self(signedData: content, encoding: indefinite ? .indefiniteLength : .definiteLength)
            }
        } catch let error as Malformed {
            throw AttestKitError(.receiptMalformed, error.reason)
        } catch {
            throw AttestKitError(.receiptMalformed, "the receipt is not a well-formed CMS SignedData structure")
        }
    }

    private init(signedData node: ASN1Node, encoding: Encoding) throws {
        let (content, certificates, signerInfo) = try BER.sequence(node, identifier: .sequence) { nodes in
            guard try Int(berEncoded: &nodes) == 1 else { throw Malformed("the SignedData version is not 1") }
            try BER.set(Self.next(&nodes), identifier: .set) { algorithms in
                try Self.digestAlgorithm(Self.next(&algorithms))
            }
            let content = try Self.encapsulatedContent(Self.next(&nodes))
            let certificates = try Self.certificates(Self.next(&nodes))
            let signerInfos = try Self.next(&nodes)
            guard signerInfos.identifier == .set else { throw Malformed("unexpected CRLs or missing signer") }
            let signerInfo = try BER.set(signerInfos, identifier: .set) { try Self.next(&$0) }
            return (content, certificates, signerInfo)
        }
        self.encoding = encoding
        self.content = content
        self.certificates = certificates
        (self.signer, self.signedAttributes, self.signature) = try Self.signer(signerInfo, certificates)
    }

    /// Verifies the signature with the signer's P-256 key, accepting the 2020 quirk (signed attributes present,
    /// signature over the raw content), and checks the messageDigest attribute against SHA-256 of the content.
    ///
    /// This does not establish trust in the signer: validate its chain first.
    /// - Returns: Which message the signature covers.
    /// - Throws: ``AttestKitError/Code/receiptSignatureInvalid``, ``AttestKitError/Code/receiptDigestMismatch``.
    package func verifySignature() throws(AttestKitError) -> SignedMessage {
        guard let key = P256.Signing.PublicKey(signer.publicKey),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature)
        else {
            throw AttestKitError(.receiptSignatureInvalid, "the receipt signature is not a P-256 ECDSA signature")
        }
        guard let attributes = signedAttributes else {
            guard key.isValidSignature(signature, for: content) else {
                throw AttestKitError(.receiptSignatureInvalid, "the receipt signature does not verify")
            }
            return .content
        }
        let message: SignedMessage
        if key.isValidSignature(signature, for: attributes.setEncoding) {
            message = .signedAttributes
        } else if key.isValidSignature(signature, for: content) {
            message = .contentDespiteSignedAttributes
        } else {
            throw AttestKitError(.receiptSignatureInvalid, "the receipt signature does not verify")
        }
        guard ConstantTime.equal(attributes.messageDigest, Array(SHA256.hash(data: content))) else {
            throw AttestKitError(.receiptDigestMismatch, "the messageDigest attribute is not SHA-256 of the content")
        }
        return message
    }
}

// MARK: - Parsing steps

extension ReceiptContainer {
    private struct Malformed: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private enum OID {
        static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
        static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
        static let contentType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
        static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
        static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
        static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 2]
    }

    private static let maximumSignatureSize = 128
    private static let maximumAttributes = 16

    private static func next(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ASN1Node {
        guard let node = nodes.next() else { throw Malformed("the receipt structure is truncated") }
        return node
    }

    private static func contextTag(_ number: UInt) -> ASN1Identifier {
        ASN1Identifier(tagWithNumber: number, tagClass: .contextSpecific)
    }

    /// `AlgorithmIdentifier` for SHA-256, parameters absent or NULL.
    private static func digestAlgorithm(_ node: ASN1Node) throws {
        try BER.sequence(node, identifier: .sequence) { nodes in
            guard try ASN1ObjectIdentifier(berEncoded: &nodes) == OID.sha256 else {
                throw Malformed("the digest algorithm is not SHA-256")
            }
            if let parameters = nodes.next() { _ = try ASN1Null(berEncoded: parameters) }
        }
    }

    /// `EncapsulatedContentInfo` with `id-data` and attached content; returns the flattened content.
    private static func encapsulatedContent(_ node: ASN1Node) throws -> ArraySlice<UInt8> {
        try BER.sequence(node, identifier: .sequence) { nodes in
            guard try ASN1ObjectIdentifier(berEncoded: &nodes) == OID.data else {
                throw Malformed("the encapsulated content is not id-data")
            }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { octets in
                try ASN1OctetString(berEncoded: octets).bytes
            }
        }
    }

    /// `certificates [0] IMPLICIT SET OF Certificate`, each read as strict DER (through the certificate cache:
    /// Apple embeds the same three in every receipt).
    private static func certificates(_ node: ASN1Node) throws -> [Certificate] {
        guard node.identifier == contextTag(0), case .constructed(let children) = node.content else {
            throw Malformed("the receipt carries no certificates")
        }
        var certificates: [Certificate] = []
        for child in children {
            guard certificates.count < maximumCertificates else { throw Malformed("too many certificates") }
            certificates.append(try CertificateCache.shared.certificate(derEncoded: child.encodedBytes))
        }
        guard !certificates.isEmpty else { throw Malformed("the receipt carries no certificates") }
        return certificates
    }

    /// `SignerInfo`: picks the signer certificate by issuer and serial number.
    private static func signer(
        _ node: ASN1Node,
        _ certificates: [Certificate]
    ) throws -> (Certificate, SignedAttributes?, ArraySlice<UInt8>) {
        try BER.sequence(node, identifier: .sequence) { nodes in
            guard try Int(berEncoded: &nodes) == 1 else { throw Malformed("the SignerInfo version is not 1") }
            let identifier = try DER.parse(next(&nodes).encodedBytes)
            let (issuer, serial) = try DER.sequence(identifier, identifier: .sequence) { fields in
                (try DistinguishedName(derEncoded: next(&fields)), try ArraySlice<UInt8>(derEncoded: &fields))
            }
            let serialNumber = Certificate.SerialNumber(bytes: serial)
            guard let signer = certificates.first(where: { $0.issuer == issuer && $0.serialNumber == serialNumber })
            else {
                throw Malformed("no embedded certificate matches the signer identifier")
            }
            try digestAlgorithm(next(&nodes))
            var algorithm = try next(&nodes)
            var attributes: SignedAttributes?
            if algorithm.identifier == contextTag(0) {
                attributes = try signedAttributes(algorithm)
                algorithm = try next(&nodes)
            }
            try BER.sequence(algorithm, identifier: .sequence) { fields in
                guard try ASN1ObjectIdentifier(berEncoded: &fields) == OID.ecdsaWithSHA256 else {
                    throw Malformed("the signature algorithm is not ecdsa-with-SHA256")
                }
            }
            let signature = try ASN1OctetString(berEncoded: next(&nodes)).bytes
            guard signature.count <= maximumSignatureSize else { throw Malformed("the signature is too long") }
            // Any remaining node (unsignedAttrs) is rejected by BER.sequence.
            return (signer, attributes, signature)
        }
    }

    /// `signedAttrs [0] IMPLICIT SET OF Attribute`: requires one messageDigest (RFC 5652 §5.3) and, when a
    /// contentType attribute is present, `id-data`. Re-encodes the attributes as a DER `SET` for verification.
    private static func signedAttributes(_ node: ASN1Node) throws -> SignedAttributes {
        guard case .constructed(let children) = node.content else {
            throw Malformed("the signed attributes are primitive")
        }
        var messageDigest: ArraySlice<UInt8>?
        var count = 0
        for attribute in children {
            count += 1
            guard count <= maximumAttributes else { throw Malformed("too many signed attributes") }
            try BER.sequence(attribute, identifier: .sequence) { fields in
                let type = try ASN1ObjectIdentifier(berEncoded: &fields)
                let values = try next(&fields)
                guard type == OID.messageDigest || type == OID.contentType else { return }
                let value = try BER.set(values, identifier: .set) { try next(&$0) }
                if type == OID.contentType {
                    guard try ASN1ObjectIdentifier(berEncoded: value) == OID.data else {
                        throw Malformed("the contentType attribute is not id-data")
                    }
                } else {
                    guard messageDigest == nil else { throw Malformed("duplicate messageDigest attribute") }
                    messageDigest = try ASN1OctetString(berEncoded: value).bytes
                }
            }
        }
        guard let messageDigest else { throw Malformed("the signed attributes lack a messageDigest") }
        var serializer = DER.Serializer()
        serializer.appendConstructedNode(identifier: .set) { coder in
            for attribute in children { coder.serializeRawBytes(attribute.encodedBytes) }
        }
        return SignedAttributes(setEncoding: serializer.serializedBytes, messageDigest: messageDigest)
    }
}
