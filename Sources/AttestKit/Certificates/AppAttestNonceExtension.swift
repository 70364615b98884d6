public import SwiftASN1
public import X509

/// The credential certificate's nonce extension, OID 1.2.840.113635.100.8.2.
///
/// Its value is `SEQUENCE { [1] EXPLICIT OCTET STRING }` (bytes `30 24 A1 22 04 20 <32 bytes>`), holding
/// SHA-256(authenticatorData ‖ clientDataHash).
public struct AppAttestNonceExtension: Sendable, Hashable {
    /// The extension's object identifier.
    public static let oid: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// The 32-byte nonce.
    public let nonce: [UInt8]

    /// Creates the extension value for a nonce (used by the software Apple of `AttestKitTesting`).
    public init(nonce: [UInt8]) {
        self.nonce = nonce
    }

    /// Decodes the extension.
    /// - Throws: ``AttestKitError/Code/nonceMissing`` when the OID differs or the value is not the expected structure.
    public init(_ ext: Certificate.Extension) throws(AttestKitError) {
        guard ext.oid == Self.oid else {
            throw AttestKitError(.nonceMissing, "expected the App Attest nonce extension, got \(ext.oid)")
        }
        do {
            let root = try DER.parse(ext.value)
            self.nonce = try DER.sequence(root, identifier: .sequence) { nodes in
                guard let tagged = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "empty nonce sequence")
                }
                return try DER.explicitlyTagged(tagged, tagNumber: 1, tagClass: .contextSpecific) { inner in
                    Array(try ASN1OctetString(derEncoded: inner).bytes)
                }
            }
        } catch {
            throw AttestKitError(.nonceMissing, "the nonce extension is not SEQUENCE { [1] OCTET STRING }")
        }
        guard nonce.count == 32 else {
            throw AttestKitError(.nonceMissing, "the nonce extension holds \(nonce.count) bytes, not 32")
        }
    }

    /// Finds and decodes the nonce extension of `certificate`.
    /// - Throws: ``AttestKitError/Code/nonceMissing`` when absent, duplicated or malformed.
    public init(certificate: Certificate) throws(AttestKitError) {
        let matches = certificate.extensions.filter { $0.oid == Self.oid }
        guard matches.count == 1, let ext = matches.first else {
            throw AttestKitError(.nonceMissing, "the credential certificate has no single nonce extension")
        }
        try self.init(ext)
    }

    /// The DER value of the extension.
    public func derValue() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific))
            { tagged in
                try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
            }
        }
        return serializer.serializedBytes
    }
}
