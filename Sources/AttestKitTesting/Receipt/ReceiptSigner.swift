import Crypto
import SwiftASN1
import X509

/// Writes App Attest receipts as Apple does (docs/apple-formats.md §4): a BER CMS `SignedData` with indefinite lengths
/// (`30 80 … 00 00`), the payload attached as a constructed OCTET STRING (`24 80`) of 1000-byte chunks
/// (`04 82 03 E8`, so the payload straddles chunks), the signer, its CA and the root embedded, and exactly one
/// `SignerInfo` without signed attributes: ecdsa-with-SHA256 directly over the payload bytes.
struct ReceiptSigner: Sendable {
    /// The size of every eContent chunk but the last.
    static let chunkSize = 1000

    /// The signing hierarchy.
    let hierarchy: ReceiptHierarchy

    private enum OID {
        static let signedData: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        static let data: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        static let sha256: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
        static let ecdsaWithSHA256: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
    }

    /// The receipt around `payload` (a DER attribute set, see ``ReceiptPayload``).
    func sign(_ payload: [UInt8]) throws(SoftwareAppleError) -> [UInt8] {
        guard case .p256(let key) = hierarchy.signer.key else {
            throw SoftwareAppleError(.signingFailed, "the receipt signer's key is not P-256")
        }
        let signature = try SigningIdentity.signing("a receipt signature") {
            Array(try key.signature(for: payload).derRepresentation)
        }
        typealias Tag = BERWriter.Tag
        let encapsulatedContent = BERWriter.indefinite(
            Tag.sequence,
            [
                BERWriter.definite(Tag.objectIdentifier, OID.data),
                BERWriter.indefinite(
                    Tag.contextZero, [BERWriter.chunkedOctetString(payload, chunkSize: Self.chunkSize)]),
            ])
        let certificates = BERWriter.indefinite(
            Tag.contextZero, [hierarchy.signer.der, hierarchy.intermediate.der, hierarchy.root.der])
        let signedData = BERWriter.indefinite(
            Tag.sequence,
            [
                BERWriter.definite(Tag.integer, [1]),
                BERWriter.definite(Tag.set, Self.sha256Algorithm),
                encapsulatedContent,
                certificates,
                BERWriter.definite(Tag.set, try signerInfo(signature: signature)),
            ])
        return BERWriter.indefinite(
            Tag.sequence,
            [
                BERWriter.definite(Tag.objectIdentifier, OID.signedData),
                BERWriter.indefinite(Tag.contextZero, [signedData]),
            ])
    }

    /// `AlgorithmIdentifier { sha256, NULL }`, as Apple writes it.
    private static let sha256Algorithm = BERWriter.definite(
        BERWriter.Tag.sequence,
        BERWriter.definite(BERWriter.Tag.objectIdentifier, OID.sha256) + BERWriter.definite(BERWriter.Tag.null, []))

    /// `SignerInfo` v1: issuer and serial number, sha256, no signed attributes, ecdsa-with-SHA256, signature.
    private func signerInfo(signature: [UInt8]) throws(SoftwareAppleError) -> [UInt8] {
        let certificate = hierarchy.signer.certificate
        let issuer = try SigningIdentity.signing("the signer identifier") {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate.issuer)
            return serializer.serializedBytes
        }
        typealias Tag = BERWriter.Tag
        return BERWriter.definite(
            Tag.sequence,
            BERWriter.definite(Tag.integer, [1])
                + BERWriter.definite(
                    Tag.sequence, issuer + BERWriter.definite(Tag.integer, Array(certificate.serialNumber.bytes)))
                + Self.sha256Algorithm
                + BERWriter.definite(Tag.sequence, BERWriter.definite(Tag.objectIdentifier, OID.ecdsaWithSHA256))
                + BERWriter.definite(Tag.octetString, signature))
    }
}
