/// A parsed App Attest assertion, as returned by `DCAppAttestService.generateAssertion`.
///
/// The object is the canonical CBOR map `{"signature": bstr, "authenticatorData": bstr}` with
/// exactly these two keys. Parsing checks its shape only: the verifier checks the signature, App ID
/// and counter.
public struct AssertionObject: Sendable {
    /// The signature: a DER ECDSA-Sig-Value (about 70 to 72 bytes), not checked here.
    public let signature: [UInt8]
    /// The authenticator data (assertion layout).
    public let authenticatorData: AuthenticatorData

    /// The largest assertion accepted (4 KiB). Real ones are about 120 bytes.
    public static let maximumLength = 4096

    private static let keys = ["signature", "authenticatorData"]

    /// Parses an assertion.
    /// - Throws: ``AttestKitError/Code/inputTooLarge`` above ``maximumLength`` bytes;
    ///   ``AttestKitError/Code/cborMalformed`` or ``AttestKitError/Code/cborLimitExceeded`` for
    ///   CBOR that is not canonical or too large; ``AttestKitError/Code/assertionMalformed`` for a
    ///   missing, unknown or mistyped key; the ``AuthenticatorData/init(assertion:)`` errors for
    ///   `authenticatorData`.
    public init(bytes: some Collection<UInt8>) throws(AttestKitError) {
        let count = bytes.count
        guard count <= Self.maximumLength else {
            throw AttestKitError(.inputTooLarge, "an assertion of \(count) bytes exceeds \(Self.maximumLength)")
        }
        let object = try CBORReader.decode(ArraySlice(bytes))
        try object.checkTextKeys(Self.keys, code: .assertionMalformed, object: "the assertion")
        self.signature = Array(try Self.byteString(object, "signature"))
        self.authenticatorData = try AuthenticatorData(assertion: try Self.byteString(object, "authenticatorData"))
    }

    /// The byte string under `key`.
    private static func byteString(
        _ object: CBORValue,
        _ key: String,
        line: UInt = #line
    ) throws(AttestKitError) -> ArraySlice<UInt8> {
        guard let value = object[text: key] else {
            throw AttestKitError(.assertionMalformed, "the assertion lacks \(key)", line: line)
        }
        guard let bytes = value.bytesValue else {
            throw AttestKitError(.assertionMalformed, "\(key) is a \(value.kindName), not a byte string", line: line)
        }
        return bytes
    }
}
