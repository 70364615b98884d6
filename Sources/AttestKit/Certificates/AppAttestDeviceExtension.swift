public import SwiftASN1
public import X509

/// The credential certificate's device information extension, OID 1.2.840.113635.100.8.7.
///
/// Its value is a `SEQUENCE` of context-specific, explicitly tagged fields. Only field `[1400]`, the OS
/// version (`"14.4"`, `"16.0.3"`, `"27.0"`), is documented by implementers; the other fields are kept by tag
/// number for inspection and never interpreted.
public struct AppAttestDeviceExtension: Sendable, Hashable {
    /// The extension's object identifier.
    public static let oid: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 7]
    /// The tag number of the OS version field.
    public static let osVersionTag: UInt = 1400

    /// The OS version of the device that made the key, when present.
    public let osVersion: String?
    /// Every field whose content is an OCTET STRING or UTF8String of printable text, by tag number.
    public let textFields: [UInt: String]

    /// Creates the extension from its fields (used by the software Apple of `AttestKitTesting`).
    public init(osVersion: String) {
        self.osVersion = osVersion
        self.textFields = [Self.osVersionTag: osVersion]
    }

    /// Decodes the extension. Unknown fields are tolerated; a malformed structure yields no fields.
    /// - Throws: ``AttestKitError/Code/certificateMalformed`` when the OID differs or the value is not a SEQUENCE.
    public init(_ ext: Certificate.Extension) throws(AttestKitError) {
        guard ext.oid == Self.oid else {
            throw AttestKitError(.certificateMalformed, "expected the App Attest device extension, got \(ext.oid)")
        }
        var fields: [UInt: String] = [:]
        do {
            let root = try DER.parse(ext.value)
            try DER.sequence(root, identifier: .sequence) { nodes in
                while let node = nodes.next() {
                    guard node.identifier.tagClass == .contextSpecific,
                        case .constructed(let children) = node.content
                    else { continue }
                    var iterator = children.makeIterator()
                    guard let inner = iterator.next(), iterator.next() == nil,
                        case .primitive(let bytes) = inner.content,
                        inner.identifier == .octetString || inner.identifier == .utf8String,
                        let text = String(validating: bytes, as: UTF8.self),
                        !text.unicodeScalars.contains(where: { $0.value < 0x20 })
                    else { continue }
                    fields[node.identifier.tagNumber] = text
                }
            }
        } catch {
            throw AttestKitError(.certificateMalformed, "the device extension is not a SEQUENCE of tagged fields")
        }
        self.textFields = fields
        self.osVersion = fields[Self.osVersionTag]
    }

    /// Finds and decodes the extension of `certificate`; `nil` when absent.
    public init?(certificate: Certificate) throws(AttestKitError) {
        guard let ext = certificate.extensions.first(where: { $0.oid == Self.oid }) else { return nil }
        try self.init(ext)
    }

    /// The DER value of the extension, holding the OS version field only.
    public func derValue() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            if let osVersion {
                try sequence.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: Self.osVersionTag, tagClass: .contextSpecific)
                ) { tagged in
                    try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(osVersion.utf8)))
                }
            }
        }
        return serializer.serializedBytes
    }
}
