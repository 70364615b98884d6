/// The attested credential data of an attestation's authenticator data (bytes 37 onwards):
/// AAGUID, credential identifier and credential public key.
///
/// Layout: `aaguid (16) ‖ credentialIdLength (u16 big-endian) ‖ credentialId ‖ COSE_Key`.
public struct AttestedCredentialData: Sendable, Hashable {
    /// The 16-byte AAGUID, which names the App Attest environment.
    public let aaguid: [UInt8]
    /// The credential identifier; App Attest writes the 32-byte key identifier here.
    public let credentialID: [UInt8]
    /// The credential public key.
    public let publicKey: COSEKey

    /// The environment whose AAGUID is exactly ``aaguid`` (all 16 bytes compared), or `nil` for an
    /// unknown AAGUID.
    public var environment: AppAttestEnvironment? { AppAttestEnvironment(aaguid: aaguid) }

    /// The AAGUID length.
    static let aaguidLength = 16
    /// The only credential identifier length App Attest uses (a SHA-256 key identifier).
    static let credentialIDLength = 32

    /// Parses the attested credential data at the start of `bytes`, returning it and the number of
    /// bytes it used; whatever follows is left to the caller.
    /// - Throws: ``AttestKitError/Code/authenticatorDataMalformed`` when the data is truncated, the
    ///   credential identifier is not 32 bytes or the key is not a P-256 COSE_Key; the CBOR reader's
    ///   codes when the key is not canonical CBOR.
    static func parse(
        _ bytes: ArraySlice<UInt8>
    ) throws(AttestKitError) -> (credential: AttestedCredentialData, length: Int) {
        let start = bytes.startIndex
        let lengthOffset = start + aaguidLength
        guard bytes.count >= aaguidLength + 2 else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the attested credential data ends before the credential id length")
        }
        let declaredLength = Int(bytes[lengthOffset]) << 8 | Int(bytes[lengthOffset + 1])
        guard declaredLength == credentialIDLength else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the credential id length is \(declaredLength), App Attest uses 32")
        }
        let idStart = lengthOffset + 2
        let keyStart = idStart + credentialIDLength
        guard bytes.endIndex > keyStart else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the attested credential data is truncated before the public key")
        }
        let (key, keyLength) = try CBORReader.decodePrefix(bytes[keyStart...])
        let credential = AttestedCredentialData(
            aaguid: Array(bytes[start..<lengthOffset]),
            credentialID: Array(bytes[idStart..<keyStart]),
            publicKey: try COSEKey(key)
        )
        return (credential, keyStart + keyLength - start)
    }

    private init(aaguid: [UInt8], credentialID: [UInt8], publicKey: COSEKey) {
        self.aaguid = aaguid
        self.credentialID = credentialID
        self.publicKey = publicKey
    }
}
