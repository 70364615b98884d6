/// A parsed App Attest attestation object, as returned by `DCAppAttestService.attestKey`.
///
/// The object is the canonical CBOR map
/// `{"fmt": "apple-appattest", "attStmt": {"x5c": [bstr, …], "receipt": bstr}, "authData": bstr}`.
/// Parsing checks its shape only: the certificate chain, nonce, key identifier, App ID,
/// environment, counter and receipt are checked later by the verifier.
public struct AttestationObject: Sendable {
    /// The attestation statement format; always `apple-appattest`.
    public let format: String
    /// The `x5c` certificates as DER, credential certificate first (1 to 4 accepted here; the
    /// verifier requires the credential certificate and the intermediate).
    public let certificates: [[UInt8]]
    /// The App Attest receipt (CMS), or `nil` when the key is absent or the byte string is empty.
    public let receipt: [UInt8]?
    /// The authenticator data (attestation layout).
    public let authenticatorData: AuthenticatorData

    /// The largest attestation object accepted (64 KiB). Real ones are about 5 to 6 KiB.
    public static let maximumLength = 65_536
    /// The only supported `fmt`.
    public static let appAttestFormat = "apple-appattest"

    private static let topLevelKeys = ["fmt", "attStmt", "authData"]
    private static let statementKeys = ["x5c", "receipt"]
    private static let certificateCount = 1...4

    /// Parses an attestation object.
    /// - Throws: ``AttestKitError/Code/inputTooLarge`` above ``maximumLength`` bytes;
    ///   ``AttestKitError/Code/cborMalformed`` or ``AttestKitError/Code/cborLimitExceeded`` for
    ///   CBOR that is not canonical or too large; ``AttestKitError/Code/unsupportedFormat`` when `fmt`
    ///   is not `apple-appattest`; ``AttestKitError/Code/attestationMalformed`` for a missing,
    ///   unknown or mistyped key; the ``AuthenticatorData/init(attestation:)`` errors for `authData`.
    public init(bytes: some Collection<UInt8>) throws(AttestKitError) {
        let count = bytes.count
        guard count <= Self.maximumLength else {
            throw AttestKitError(.inputTooLarge, "an attestation of \(count) bytes exceeds \(Self.maximumLength)")
        }
        let object = try CBORReader.decode(ArraySlice(bytes))
        try object.checkTextKeys(Self.topLevelKeys, code: .attestationMalformed, object: "the attestation")

        guard let format = object[text: "fmt"] else { throw Self.missing("fmt") }
        guard let formatName = format.textValue else { throw Self.mistyped("fmt", format, "a text string") }
        guard formatName == Self.appAttestFormat else {
            throw AttestKitError(.unsupportedFormat, "the attestation format is not \(Self.appAttestFormat)")
        }

        guard let statement = object[text: "attStmt"] else { throw Self.missing("attStmt") }
        try statement.checkTextKeys(Self.statementKeys, code: .attestationMalformed, object: "attStmt")
        guard let x5c = statement[text: "x5c"] else { throw Self.missing("attStmt.x5c") }
        guard let chain = x5c.arrayValue else { throw Self.mistyped("attStmt.x5c", x5c, "an array") }
        guard Self.certificateCount.contains(chain.count) else {
            throw AttestKitError(.attestationMalformed, "attStmt.x5c holds \(chain.count) certificates")
        }
        var certificates = [[UInt8]]()
        certificates.reserveCapacity(chain.count)
        for certificate in chain {
            guard let der = certificate.bytesValue, !der.isEmpty else {
                throw Self.mistyped("an attStmt.x5c entry", certificate, "a non-empty byte string")
            }
            certificates.append(Array(der))
        }

        var receipt: [UInt8]?
        if let value = statement[text: "receipt"] {
            guard let bytes = value.bytesValue else { throw Self.mistyped("attStmt.receipt", value, "a byte string") }
            receipt = bytes.isEmpty ? nil : Array(bytes)
        }

        guard let authData = object[text: "authData"] else { throw Self.missing("authData") }
        guard let authDataBytes = authData.bytesValue else {
            throw Self.mistyped("authData", authData, "a byte string")
        }

        self.format = formatName
        self.certificates = certificates
        self.receipt = receipt
        self.authenticatorData = try AuthenticatorData(attestation: authDataBytes)
    }

    private static func missing(_ key: String, line: UInt = #line) -> AttestKitError {
        AttestKitError(.attestationMalformed, "the attestation lacks \(key)", line: line)
    }

    private static func mistyped(
        _ key: String,
        _ value: CBORValue,
        _ expected: String,
        line: UInt = #line
    ) -> AttestKitError {
        AttestKitError(.attestationMalformed, "\(key) is a \(value.kindName), not \(expected)", line: line)
    }
}
