public import SwiftASN1
public import X509

/// The credential certificate's key access-control extension, OID 1.2.840.113635.100.8.6: the access policy the
/// Secure Enclave enforced on the attested key (Apple calls its content the `aclBlob`).
///
/// Apple documents it for macOS (from macOS 27): the extension value is a DER SEQUENCE holding a single OCTET
/// STRING, and a macOS key is to be trusted only when that octet string is exactly
/// ``macOSFullSecurityPolicy``, the policy of a key usable only with System Integrity Protection and Full Security
/// mode on. Keys of other platforms carry the extension too, with other contents; keys attested before 2026 carry
/// none. docs/apple-formats.md describes the bytes.
///
/// The parse is strict and bounded (the value is Apple-signed, but a parser sees it before anything is trusted):
///
/// - the value is `SEQUENCE { [3] EXPLICIT OCTET STRING }`, the layout of every real leaf seen so far;
/// - the octet string (the policy, at most ``maximumPolicyLength`` bytes) is DER
///   `SEQUENCE { UTF8String version, SEQUENCE OF SEQUENCE { UTF8String operation, constraint… } }` with at most
///   ``maximumOperations`` operations of distinct names;
/// - nothing trails, lengths are definite and minimal. Anything else is
///   ``AttestKitError/Code/keyAccessControlMalformed``.
///
/// Apple documents the policy only as bytes to compare; the version, the operation names and their constraints
/// are exposed as read, never interpreted.
public struct AppAttestKeyAccessControl: Sendable, Hashable {
    /// The extension's object identifier.
    public static let oid: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 6]
    /// The context-specific tag that wraps the policy's OCTET STRING.
    public static let policyTag: UInt = 3
    /// The largest policy accepted, in bytes (real policies are 66 to 69 bytes).
    public static let maximumPolicyLength = 1024
    /// The most operations a policy may list (real policies list 4 or 5).
    public static let maximumOperations = 32
    /// The longest version or operation name accepted, in bytes.
    public static let maximumNameLength = 32

    /// The policy Apple documents for a macOS key that the Secure Enclave lets sign only with System Integrity
    /// Protection and Full Security mode on (66 bytes; Base64
    /// `MEAMAjExMDowCQwCb2uhAwEB/zAJDAJvYaEDAQH/MAsMBG9kZWyhAwEB/zAVDARvc2duoAYMBHJzZWMwBaYDAgEB`). Apple: macOS
    /// keys are to be trusted for this exact value only, which does not change across macOS versions.
    public static let macOSFullSecurityPolicy: [UInt8] = [
        0x30, 0x40, 0x0C, 0x02, 0x31, 0x31, 0x30, 0x3A, 0x30, 0x09, 0x0C, 0x02, 0x6F, 0x6B, 0xA1, 0x03, 0x01, 0x01,
        0xFF, 0x30, 0x09, 0x0C, 0x02, 0x6F, 0x61, 0xA1, 0x03, 0x01, 0x01, 0xFF, 0x30, 0x0B, 0x0C, 0x04, 0x6F, 0x64,
        0x65, 0x6C, 0xA1, 0x03, 0x01, 0x01, 0xFF, 0x30, 0x15, 0x0C, 0x04, 0x6F, 0x73, 0x67, 0x6E, 0xA0, 0x06, 0x0C,
        0x04, 0x72, 0x73, 0x65, 0x63, 0x30, 0x05, 0xA6, 0x03, 0x02, 0x01, 0x01,
    ]

    /// One operation of the policy: its name and its constraint, as read.
    public struct Operation: Sendable, Hashable {
        /// The operation's name as the policy spells it (for example `osgn`); Apple documents none of them.
        public let name: String
        /// The DER of the elements after the name (the constraint), uninterpreted.
        public let constraint: [UInt8]
    }

    /// What a credential certificate says about its key's access control.
    public enum Reading: Sendable, Hashable {
        /// The certificate has no access-control extension (keys attested before 2026).
        case absent
        /// The extension is present and well formed.
        case present(AppAttestKeyAccessControl)
        /// The extension is present (possibly more than once) but not the structure above; its DER value, as
        /// signed, is kept for inspection.
        case malformed(extensionValue: [UInt8])

        /// The well-formed extension, or `nil`.
        public var accessControl: AppAttestKeyAccessControl? {
            if case .present(let accessControl) = self { return accessControl }
            return nil
        }
    }

    /// The extension's DER value, exactly as signed.
    public let extensionValue: [UInt8]
    /// The policy: the OCTET STRING the value wraps (Apple's `aclBlob`).
    public let policy: [UInt8]
    /// The policy's first element, its format version as read (`"11"` in every real policy).
    public let version: String
    /// The policy's operations, in their order.
    public let operations: [Operation]

    /// Whether ``policy`` is exactly ``macOSFullSecurityPolicy`` (compared in constant time).
    public var isMacOSFullSecurityPolicy: Bool { ConstantTime.equal(policy, Self.macOSFullSecurityPolicy) }

    /// Decodes the extension.
    /// - Throws: ``AttestKitError/Code/keyAccessControlMalformed`` when the OID differs or the value is not the
    ///   structure described above.
    public init(_ ext: Certificate.Extension) throws(AttestKitError) {
        guard ext.oid == Self.oid else {
            throw AttestKitError(
                .keyAccessControlMalformed, "expected the key access-control extension, got \(ext.oid)")
        }
        try self.init(extensionValue: Array(ext.value))
    }

    /// Decodes an extension value.
    /// - Throws: ``AttestKitError/Code/keyAccessControlMalformed`` when the value is not the structure described
    ///   above.
    public init(extensionValue: [UInt8]) throws(AttestKitError) {
        let policy: [UInt8]
        do {
            let root = try DER.parse(extensionValue[...])
            policy = try DER.sequence(root, identifier: .sequence) { nodes in
                guard let tagged = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "empty access-control sequence")
                }
                let bytes = try DER.explicitlyTagged(tagged, tagNumber: Self.policyTag, tagClass: .contextSpecific) {
                    Array(try ASN1OctetString(derEncoded: $0).bytes)
                }
                guard nodes.next() == nil else {
                    throw ASN1Error.invalidASN1Object(reason: "extra elements after the policy")
                }
                return bytes
            }
        } catch {
            throw AttestKitError(.keyAccessControlMalformed, "the value is not SEQUENCE { [3] OCTET STRING }")
        }
        guard (1...Self.maximumPolicyLength).contains(policy.count) else {
            throw AttestKitError(
                .keyAccessControlMalformed,
                "the policy holds \(policy.count) bytes, at most \(Self.maximumPolicyLength)")
        }
        let (version, operations) = try Self.parsePolicy(policy)
        self.extensionValue = extensionValue
        self.policy = policy
        self.version = version
        self.operations = operations
    }

    /// Wraps `policy` as an extension value, `SEQUENCE { [3] EXPLICIT OCTET STRING }`, and decodes it (the software
    /// Apple of `AttestKitTesting` writes it so).
    /// - Throws: ``AttestKitError/Code/keyAccessControlMalformed`` when `policy` is not a well-formed policy.
    public init(policy: [UInt8]) throws(AttestKitError) {
        var serializer = DER.Serializer()
        do {
            try serializer.appendConstructedNode(identifier: .sequence) { sequence in
                try sequence.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: Self.policyTag, tagClass: .contextSpecific)
                ) { tagged in
                    try tagged.serialize(ASN1OctetString(contentBytes: policy[...]))
                }
            }
        } catch {
            throw AttestKitError(.keyAccessControlMalformed, "the policy cannot be wrapped")
        }
        try self.init(extensionValue: serializer.serializedBytes)
    }

    /// What `certificate` says about its key's access control: ``Reading/absent`` without the extension,
    /// ``Reading/malformed(extensionValue:)`` when it is duplicated or malformed; never throws.
    public static func reading(of certificate: Certificate) -> Reading {
        let matches = certificate.extensions.filter { $0.oid == oid }
        guard let first = matches.first else { return .absent }
        guard matches.count == 1, let parsed = try? AppAttestKeyAccessControl(first) else {
            return .malformed(extensionValue: Array(first.value))
        }
        return .present(parsed)
    }

    /// `SEQUENCE { UTF8String version, SEQUENCE OF SEQUENCE { UTF8String name, constraint… } }`.
    private static func parsePolicy(_ policy: [UInt8]) throws(AttestKitError) -> (String, [Operation]) {
        do {
            let root = try DER.parse(policy[...])
            return try DER.sequence(root, identifier: .sequence) { nodes in
                guard let versionNode = nodes.next(), let list = nodes.next(), nodes.next() == nil else {
                    throw ASN1Error.invalidASN1Object(reason: "a policy is a version and a list of operations")
                }
                let version = try name(versionNode)
                var operations: [Operation] = []
                try DER.sequence(list, identifier: .sequence) { entries in
                    while let entry = entries.next() {
                        guard operations.count < maximumOperations else {
                            throw ASN1Error.invalidASN1Object(reason: "too many operations")
                        }
                        operations.append(try operation(entry))
                    }
                }
                guard !operations.isEmpty, Set(operations.map(\.name)).count == operations.count else {
                    throw ASN1Error.invalidASN1Object(reason: "no operations, or one named twice")
                }
                return (version, operations)
            }
        } catch let error as AttestKitError {
            throw error
        } catch {
            throw AttestKitError(
                .keyAccessControlMalformed,
                "the policy is not SEQUENCE { version, SEQUENCE OF { operation, constraint } } (at most "
                    + "\(maximumOperations) distinct operations)")
        }
    }

    /// `SEQUENCE { UTF8String name, constraint… }` with at least one constraint element.
    private static func operation(_ node: ASN1Node) throws -> Operation {
        try DER.sequence(node, identifier: .sequence) { elements in
            guard let nameNode = elements.next() else {
                throw ASN1Error.invalidASN1Object(reason: "an empty operation")
            }
            let name = try name(nameNode)
            var constraint: [UInt8] = []
            while let element = elements.next() { constraint += element.encodedBytes }
            guard !constraint.isEmpty else {
                throw ASN1Error.invalidASN1Object(reason: "an operation without a constraint")
            }
            return Operation(name: name, constraint: constraint)
        }
    }

    /// A UTF8String of 1 to ``maximumNameLength`` printable ASCII characters.
    private static func name(_ node: ASN1Node) throws -> String {
        guard node.identifier == .utf8String, case .primitive(let bytes) = node.content,
            (1...maximumNameLength).contains(bytes.count), bytes.allSatisfy({ (0x21...0x7E).contains($0) }),
            let text = String(validating: bytes, as: UTF8.self)
        else {
            throw ASN1Error.invalidASN1Object(reason: "a name is not a short printable UTF8String")
        }
        return text
    }
}
